package tokenize_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/briefd/briefd/internal/tokenize"
)

func ExampleEncoding_Count() {
	enc, err := tokenize.Get(tokenize.O200K)
	if err != nil {
		panic(err)
	}
	fmt.Println(enc.Count("tiktoken is great!"))
	fmt.Println(enc.Count("<|endoftext|>")) // special tokens are ordinary text
	// Output:
	// 6
	// 7
}

func ExampleEncoding_CountContext() {
	enc, err := tokenize.Get(tokenize.CL100K)
	if err != nil {
		panic(err)
	}
	// A minified bundle or a base64 blob counts in O(n log n); a deadline
	// still stops it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	_, err = enc.CountContext(ctx, strings.Repeat("x", 1<<20))
	fmt.Println(err)
	// Output:
	// context deadline exceeded
}

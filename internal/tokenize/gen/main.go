// Command gen writes the vocabulary files that package tokenize embeds,
// from the .tiktoken rank files that tiktoken-go-loader ships (offline).
// Run it with go generate in internal/tokenize; TestVocabFilesUpToDate
// checks that the committed files are what it writes.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/briefd/briefd/internal/tokenize/vocabfile"
	loader "github.com/pkoukk/tiktoken-go-loader"
)

func main() {
	dir := flag.String("dir", ".", "directory to write <encoding>.vocab files into")
	flag.Parse()
	for _, name := range []string{"cl100k_base", "o200k_base"} {
		if err := write(*dir, name); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
	}
}

func write(dir, name string) error {
	ranks, err := loader.NewOfflineLoader().LoadTiktokenBpe(name + ".tiktoken")
	if err != nil {
		return fmt.Errorf("load %s: %w", name, err)
	}
	data, err := vocabfile.Marshal(ranks)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return os.WriteFile(filepath.Join(dir, name+".vocab"), data, 0o644)
}

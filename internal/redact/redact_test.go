package redact_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/briefd/briefd/internal/redact"
)

func TestURLs(t *testing.T) {
	got := redact.URLs("nats://u:s3cret@a:4222,nats://b:4222,redis://:pw@c:6379/0")
	if strings.Contains(got, "s3cret") || strings.Contains(got, "pw@") || !strings.Contains(got, "nats://b:4222") {
		t.Fatalf("got %q", got)
	}
}

func TestError(t *testing.T) {
	raw := "nats://user:s3cret@ho st:4222"
	_, err := url.Parse(raw)
	if err == nil {
		t.Fatal("want a parse error")
	}
	if msg := redact.Error(err, raw); strings.Contains(msg, "s3cret") {
		t.Fatalf("secret in %q", msg)
	}
	if msg := redact.Error(errors.New("plain"), raw); msg != "plain" {
		t.Fatalf("got %q", msg)
	}
}

package cascade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// go-openai's errors carry no response headers, so a RoundTripper notes
// the status and Retry-After of each response in a holder that the caller
// puts in the request's context.
type respInfoKey struct{}

type respInfo struct {
	status     int
	retryAfter string
}

type captureTransport struct{ base http.RoundTripper }

func (t captureTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if info, ok := r.Context().Value(respInfoKey{}).(*respInfo); ok && resp != nil {
		info.status = resp.StatusCode
		info.retryAfter = resp.Header.Get("Retry-After")
	}
	return resp, err
}

// withCapture returns a copy of c whose transport records response headers.
func withCapture(c *http.Client) *http.Client {
	cp := *c
	base := cp.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	cp.Transport = captureTransport{base: base}
	return &cp
}

// parseRetryAfter reads a Retry-After value: seconds (integer or decimal)
// or an HTTP date. It returns 0 when absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now))
	}
	return 0
}

// errClass is how the cascade reacts to a failed request.
type errClass int

const (
	// classRetryable: 429, 5xx, connection resets; retried with backoff.
	classRetryable errClass = iota
	// classTimeout: the model's own timeout; the cascade moves to the next model.
	classTimeout
	// classPermanent: 400, 401, 403, 404...; next model at once.
	classPermanent
	// classContextLength: the prompt does not fit; shrink and retry.
	classContextLength
	// classFormat: the endpoint rejects response_format; degrade it and retry.
	classFormat
	// classBadResponse: a 200 whose body is not a usable completion.
	classBadResponse
	// classCanceled: the caller's context is done; stop everything.
	classCanceled
	// classSpend: the spend guard refused the request; stop everything.
	classSpend
	// classOpen: the model's circuit breaker refused the request; next model.
	classOpen
	// classLimit: the endpoint refuses max_tokens or max_completion_tokens;
	// send the other and retry.
	classLimit
)

func (c errClass) String() string {
	return [...]string{"retryable", "timeout", "permanent", "context length", "response format", "bad response", "canceled", "spend limit", "circuit open", "token limit parameter"}[c]
}

// callError is a failed request with its class.
type callError struct {
	class errClass
	err   error
}

func (e *callError) Error() string { return e.class.String() + ": " + e.err.Error() }
func (e *callError) Unwrap() error { return e.err }

func classOf(err error) errClass {
	var ce *callError
	if errors.As(err, &ce) {
		return ce.class
	}
	return classPermanent
}

var (
	contextLengthRe = regexp.MustCompile(`(?i)context[ _-]?length|context window|maximum context|too many tokens|prompt is too long|too long for|exceeds? the (model'?s? )?(maximum )?(context|input)|reduce the length|input is too long`)
	formatRe        = regexp.MustCompile(`(?i)response_format|json_schema|json_object|response format`)
	limitRe         = regexp.MustCompile(`(?i)max_completion_tokens|max_tokens`)
)

// classify maps a go-openai error to its class. parent is the caller's
// context (a done parent means cancellation, not a model timeout).
func classify(err error, parent context.Context, info *respInfo) errClass {
	if parent.Err() != nil {
		return classCanceled
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return classTimeout
	}
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		code := ""
		if s, ok := apiErr.Code.(string); ok {
			code = s
		}
		return statusClass(apiErr.HTTPStatusCode, code+" "+apiErr.Message)
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		text := string(reqErr.Body)
		if reqErr.Err != nil {
			text += " " + reqErr.Err.Error()
		}
		return statusClass(reqErr.HTTPStatusCode, text)
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syn) || errors.As(err, &typ) {
		return classBadResponse
	}
	if info.status == http.StatusOK && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
		return classBadResponse // a 200 with an empty or truncated body
	}
	var netErr net.Error
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &netErr) {
		return classRetryable
	}
	return classPermanent // validation errors of go-openai, unknown failures: never loop on them
}

func statusClass(status int, text string) errClass {
	switch {
	case status == http.StatusRequestEntityTooLarge:
		return classContextLength
	case status == http.StatusBadRequest || status == http.StatusUnprocessableEntity:
		if contextLengthRe.MatchString(text) {
			return classContextLength
		}
		if formatRe.MatchString(text) {
			return classFormat
		}
		if limitRe.MatchString(text) {
			return classLimit
		}
		return classPermanent
	case status == http.StatusRequestTimeout || status == http.StatusConflict || status == http.StatusTooEarly ||
		status == http.StatusTooManyRequests || status >= 500 || status == 0:
		return classRetryable
	default:
		return classPermanent
	}
}

// isReasoningModel reports the model families that reject max_tokens and
// a temperature other than 1 (go-openai checks this before sending).
func isReasoningModel(name string) bool {
	for _, p := range []string{"o1", "o3", "o4", "gpt-5", "gpt-6"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// describe is an attempt's error text: the class and a bounded message
// (an HTML error page must not end up in the audit trail whole).
func describe(cls errClass, err error) string {
	return clip(fmt.Sprintf("%s: %v", cls, err), 300)
}

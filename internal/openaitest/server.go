// Package openaitest runs a fake OpenAI-compatible chat-completions server
// on httptest, scripted one response per request, for tests of code that
// calls a model (internal/cascade).
//
// A test lists the responses in order:
//
//	srv := openaitest.NewServer(t,
//		openaitest.Status(429, "slow down").WithRetryAfter("2"),
//		openaitest.Reply("TASK: ..."),
//	)
//
// and afterwards asserts what was sent with [Server.Requests].
package openaitest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Step scripts the response to one request. The zero Step answers 200 with
// an empty assistant message.
type Step struct {
	// Latency delays the response (the client's context still applies).
	Latency time.Duration
	// Status is the HTTP status; 0 means 200.
	Status int
	// RetryAfter, when set, is sent as the Retry-After header.
	RetryAfter string
	// Content is the assistant message of a 200 response, or the error
	// message of an error status (sent as an OpenAI error object).
	Content string
	// Code is the error code of an error status (e.g. "context_length_exceeded").
	Code string
	// Body, when set, is sent verbatim instead of a generated body (for
	// malformed JSON, an empty body or an HTML error page).
	Body *string
	// ContentType overrides the Content-Type header (default application/json).
	ContentType string
	// Hang blocks until the client gives up (its timeout) or the server closes.
	Hang bool
	// Func, when set, computes the step from the request (for benchmarks
	// and echo-style fakes); the other fields are ignored.
	Func func(Request) Step
}

// Reply is a 200 response whose assistant message is content.
func Reply(content string) Step { return Step{Content: content} }

// Status is an error response with an OpenAI error object.
func Status(code int, message string) Step { return Step{Status: code, Content: message} }

// TooLong is the 400 context-length error OpenAI and vLLM send when the
// prompt does not fit the model.
func TooLong() Step {
	return Step{Status: http.StatusBadRequest, Code: "context_length_exceeded",
		Content: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9100 tokens. Please reduce the length of the messages."}
}

// Hang never answers: the request ends when the client's context does.
func Hang() Step { return Step{Hang: true} }

// Malformed is a 200 response whose body is not valid JSON.
func Malformed() Step {
	b := `{"id":"chatcmpl-1","choices":[{"message":{"content":"trunc`
	return Step{Body: &b}
}

// RawBody is a response with the given status, content type and body.
func RawBody(status int, contentType, body string) Step {
	return Step{Status: status, ContentType: contentType, Body: &body}
}

// WithRetryAfter returns s with a Retry-After header.
func (s Step) WithRetryAfter(v string) Step { s.RetryAfter = v; return s }

// WithLatency returns s delayed by d.
func (s Step) WithLatency(d time.Duration) Step { s.Latency = d; return s }

// Message is one chat message of a recorded request.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is what the server received, decoded.
type Request struct {
	Model               string          `json:"model"`
	Messages            []Message       `json:"messages"`
	MaxTokens           int             `json:"max_tokens"`
	MaxCompletionTokens int             `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	ResponseFormat      json.RawMessage `json:"response_format"`
	// Header holds the request headers (Authorization included).
	Header http.Header `json:"-"`
	// Raw is the request body as sent.
	Raw []byte `json:"-"`
}

// Profile makes the server refuse, as a real endpoint does, the request
// parameters that endpoint does not support, with its kind of error (400),
// before the script is consulted. The zero Profile accepts everything.
type Profile struct {
	// NoJSONSchema refuses response_format json_schema (Ollama before 0.5,
	// vLLM without guided decoding).
	NoJSONSchema bool
	// NoResponseFormat refuses any response_format (llama.cpp builds
	// without grammar support, many proxies).
	NoResponseFormat bool
	// NoMaxTokens refuses max_tokens (OpenAI's reasoning models and its
	// newer API).
	NoMaxTokens bool
	// NoMaxCompletionTokens refuses max_completion_tokens (servers that
	// predate it).
	NoMaxCompletionTokens bool
}

// refuse returns the error a server with profile p sends req, or nil.
func (p Profile) refuse(req Request) *Step {
	var format struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(req.ResponseFormat, &format)
	bad := func(msg, code string) *Step {
		return &Step{Status: http.StatusBadRequest, Content: msg, Code: code}
	}
	switch {
	case p.NoResponseFormat && format.Type != "":
		return bad("'response_format' is not supported by this server", "")
	case p.NoJSONSchema && format.Type == "json_schema":
		return bad("response_format.type 'json_schema' is not supported", "")
	case p.NoMaxTokens && req.MaxTokens > 0:
		return bad("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", "unsupported_parameter")
	case p.NoMaxCompletionTokens && req.MaxCompletionTokens > 0:
		return bad("Unrecognized request argument supplied: max_completion_tokens", "")
	}
	return nil
}

// Server is a scripted fake endpoint. Its URL ends in /v1, ready to be a
// client's base URL. Methods are safe for concurrent use.
type Server struct {
	URL string

	srv      *httptest.Server
	t        testing.TB
	done     chan struct{}
	mu       sync.Mutex
	script   []Step
	fallback *Step
	reqs     []Request
	record   bool
	profile  Profile
	inFlight atomic.Int64
	peak     atomic.Int64
}

// NewServer starts a server answering with script, one step per request in
// order. A request past the end of the script fails the test (500) unless
// [Server.SetDefault] gave a default. The server is closed by t.Cleanup.
func NewServer(t testing.TB, script ...Step) *Server {
	t.Helper()
	s := &Server{t: t, done: make(chan struct{}), script: script, record: true}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(func() {
		close(s.done)
		s.srv.Close()
	})
	return s
}

// NewHandler returns the fake endpoint as an http.Handler outside a test:
// every request is answered with step, nothing is recorded, and the caller
// serves it where it likes (a fault harness takes the listener down and up
// to simulate an outage). Mount it so that the client's base URL maps to
// it (requests go to <base>/chat/completions; the path is not checked).
func NewHandler(step Step) http.Handler {
	s := &Server{done: make(chan struct{}), fallback: &step}
	return http.HandlerFunc(s.serve)
}

// errorf fails the test of a Server made by NewServer; a handler made by
// NewHandler only answers the request with the error status.
func (s *Server) errorf(format string, args ...any) {
	if s.t != nil {
		s.t.Errorf(format, args...)
	}
}

// Push appends steps to the script.
func (s *Server) Push(steps ...Step) {
	s.mu.Lock()
	s.script = append(s.script, steps...)
	s.mu.Unlock()
}

// SetDefault makes step the answer to every request past the script.
func (s *Server) SetDefault(step Step) {
	s.mu.Lock()
	s.fallback = &step
	s.mu.Unlock()
}

// SetProfile makes the server refuse what an endpoint with p refuses.
func (s *Server) SetProfile(p Profile) {
	s.mu.Lock()
	s.profile = p
	s.mu.Unlock()
}

// SetRecord turns request recording on or off (benchmarks turn it off to
// keep memory flat). It is on by default.
func (s *Server) SetRecord(on bool) {
	s.mu.Lock()
	s.record = on
	s.mu.Unlock()
}

// Requests returns a copy of the requests received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// PeakInFlight is the most requests the server held at once.
func (s *Server) PeakInFlight() int64 { return s.peak.Load() }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			break
		}
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		s.errorf("openaitest: request body is not JSON: %v", err)
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	req.Header = r.Header.Clone()
	req.Raw = body

	s.mu.Lock()
	if s.record {
		s.reqs = append(s.reqs, req)
	}
	var step Step
	if refused := s.profile.refuse(req); refused != nil {
		s.mu.Unlock()
		s.respond(w, r, req, *refused)
		return
	}
	switch {
	case len(s.script) > 0:
		step, s.script = s.script[0], s.script[1:]
	case s.fallback != nil:
		step = *s.fallback
	default:
		s.mu.Unlock()
		s.errorf("openaitest: request %d past the end of the script (model %q)", len(s.reqs), req.Model)
		http.Error(w, "script exhausted", http.StatusInternalServerError)
		return
	}
	s.mu.Unlock()
	if step.Func != nil {
		step = step.Func(req)
	}
	s.respond(w, r, req, step)
}

// respond answers req with step.
func (s *Server) respond(w http.ResponseWriter, r *http.Request, req Request, step Step) {
	if step.Hang {
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
		return
	}
	if step.Latency > 0 {
		t := time.NewTimer(step.Latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		case <-s.done:
			t.Stop()
			return
		}
	}
	ct := step.ContentType
	if ct == "" {
		ct = "application/json"
	}
	w.Header().Set("Content-Type", ct)
	if step.RetryAfter != "" {
		w.Header().Set("Retry-After", step.RetryAfter)
	}
	status := step.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	switch {
	case step.Body != nil:
		io.WriteString(w, *step.Body)
	case status >= 400:
		writeJSON(w, map[string]any{"error": map[string]any{
			"message": step.Content, "type": errorType(status), "code": nullable(step.Code),
		}})
	default:
		writeJSON(w, completion(req.Model, step.Content))
	}
}

func writeJSON(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("openaitest: marshal: %v", err)) // only our own maps reach here
	}
	w.Write(b)
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func errorType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	default:
		return "invalid_request_error"
	}
}

func completion(model, content string) map[string]any {
	return map[string]any{
		"id":      "chatcmpl-openaitest",
		"object":  "chat.completion",
		"created": 1700000000,
		"model":   model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": content},
			"finish_reason": "stop",
		}},
		"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": len(content) / 4, "total_tokens": 100 + len(content)/4},
	}
}

// Package cascade writes briefings with language models behind an
// OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp's server).
//
// A [Cascade] tries its models in order; on each, the normal prompt (or the
// structured one) and then the aggressive one. The prompts ask for a
// hand-off: the task and the user's instructions, findings with their
// results, the last known state of each object in play, decisions and why,
// errors and their resolution, and what is still to do. Retryable failures
// are retried with exponential backoff and jitter, honouring Retry-After;
// permanent ones and timeouts move to the next model; a context-length
// error shrinks the serialized input; a refused response_format or token
// limit parameter is changed and remembered per model. Each model has a
// circuit [Breaker] that gates every request, retries included; a
// [SpendGuard] bounds requests per conversation and per tenant; one
// Summarize call is bounded by Config.MaxDuration.
//
// Every reply passes a fail-closed acceptance gate, whose verdicts per rule
// ([Rules]) are recorded with each attempt (compact.Attempt.Verdicts):
// format, labels (read tolerantly: "**TASK:**", "## Task", "Goal:"), leaks
// (wrapper and role tags however spelled), identifiers and quotations
// (verbatim in the source), user instructions (only what a user wrote,
// never a tool's or an assistant's words), completion claims (each tied to
// a message that concerns it and shows its kind of success: an edit, a
// run, a performed action), and length (the evidence ledger shares the
// budget and is trimmed to fit a reply a little long). A rejected reply is
// sent back once with its verdicts; a claim that another message does show
// is answered with that message's id. When nothing is accepted, Summarize
// returns a *compact.AttemptsError and the engine keeps the deterministic
// briefing. The briefing returned is the model's hand-off followed by the
// deterministic evidence ledger.
//
// testdata/corpus holds the replies the gate is measured on; see its
// README.
package cascade

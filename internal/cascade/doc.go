// Package cascade writes briefings with language models behind an
// OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp's server).
//
// A [Cascade] tries its models in order; on each, the normal prompt (or the
// structured one) and then the aggressive one. Retryable failures are
// retried with exponential backoff and jitter, honouring Retry-After;
// permanent ones and timeouts move to the next model; a context-length
// error shrinks the serialized input. Each model has a circuit [Breaker];
// a [SpendGuard] bounds requests per conversation and per tenant.
//
// Every reply passes a fail-closed acceptance gate before it is returned:
// length, budget, no wrapper tags, required fields, and fidelity (every
// identifier and quote occurs in the source, every completed step cites a
// message showing success). A rejected reply is sent back once with its
// violations, then the cascade escalates. When nothing is accepted,
// Summarize returns a *compact.AttemptsError and the engine keeps the
// deterministic briefing. The briefing returned is the model's narrative
// followed by the deterministic evidence ledger, verbatim.
package cascade

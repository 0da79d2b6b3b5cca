package queue

import (
	"errors"
	"fmt"
)

var (
	// ErrPermanent marks an error that retrying cannot fix: the snapshot is
	// terminated and dead-lettered. Wrap with [Permanent].
	ErrPermanent = errors.New("permanent error")
	// ErrMalformed is matched by every error about a snapshot that breaks
	// the protocol: bad manifest, unknown version, missing body, hash
	// mismatch. It is permanent.
	ErrMalformed = errors.New("malformed snapshot")
	// ErrInvalidToken is returned for a tenant or conversation id outside
	// [A-Za-z0-9_-]{1,128}.
	ErrInvalidToken = errors.New("id must be 1-128 characters of [A-Za-z0-9_-]")
	// ErrBodyTooLarge is returned before publishing a body larger than
	// Config.MaxBodyBytes.
	ErrBodyTooLarge = errors.New("message body too large")
	// ErrNotFound is returned by LoadSnapshot when no such snapshot exists.
	ErrNotFound = errors.New("snapshot not found")
	// ErrNoStream is matched by the error of a publish that no stream
	// took: the briefd streams do not exist yet. Workers create them when
	// they start (worker run); EnsureStreams does too.
	ErrNoStream = errors.New("no briefd stream stores this subject: the streams do not exist yet; workers create them when they start (worker run)")
	// ErrSuperseded is matched by the error of a snapshot whose manifest
	// was not stored and was not re-sent because a newer snapshot of the
	// conversation had been published (which names every message).
	ErrSuperseded = errors.New("superseded by a newer snapshot")
)

type permanentError struct{ err error }

func (e permanentError) Error() string        { return e.err.Error() }
func (e permanentError) Unwrap() error        { return e.err }
func (e permanentError) Is(target error) bool { return target == ErrPermanent }

// Permanent marks err as permanent: the consumer terminates the snapshot
// and writes a dead-letter record instead of retrying. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

type malformedError struct{ reason string }

func (e *malformedError) Error() string { return "malformed snapshot: " + e.reason }
func (e *malformedError) Is(target error) bool {
	return target == ErrMalformed || target == ErrPermanent
}

func malformed(format string, args ...any) error {
	return &malformedError{reason: fmt.Sprintf(format, args...)}
}

// missingBodyError is malformed, but the consumer gives it one redelivery:
// with async publishing a body and its manifest land in two streams and the
// manifest can, rarely, be delivered a moment before the body is stored.
type missingBodyError struct{ malformedError }

// Is makes a missing body match ErrBodyMissing as well as ErrMalformed.
func (e *missingBodyError) Is(target error) bool {
	return target == ErrBodyMissing || e.malformedError.Is(target)
}

func isMissingBody(err error) bool {
	var m *missingBodyError
	return errors.As(err, &m)
}

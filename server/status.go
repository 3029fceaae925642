package server

import (
	"errors"
	"strconv"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pixelflight/pixelflight/internal/clip"
	"github.com/pixelflight/pixelflight/udf"
)

// The facts a client acts on travel as a google.rpc.ErrorInfo in the
// status's details (gRPC's grpc-status-details-bin trailer), beside the
// message people read, so that clients need not find them in its text
// (docs/protocol.md, Status codes). The clients read the trailer: Arrow
// Java's FlightRuntimeException has it in its status's metadata; pyarrow
// hands it only to client middleware, and only when the call's response
// headers were empty (the trailers then stand for them), which is why
// DoExchange sets no response headers.
const (
	// ErrorDomain is the ErrorInfo's domain.
	ErrorDomain = "pixelflight"
	// ReasonStrictRow: a row failed in strict mode. Metadata: "row", the
	// row of the input batch, from 0, in decimal; "message", why it failed.
	ReasonStrictRow = "STRICT_ROW"
	// ReasonBadCommand: the command, its params or its input cannot run
	// (udf.ErrBadCommand). Metadata: "message", the status message
	// without the "op NAME: " and "bad command: " that lead it.
	ReasonBadCommand = "BAD_COMMAND"
)

// newStatus is err's status: code, the clipped message and, for a
// strict-mode row failure or a refused command, the ErrorInfo.
func newStatus(c codes.Code, err error) *status.Status {
	st := status.New(c, clip.Message(err.Error()))
	if info := errorInfo(err); info != nil {
		if d, e := st.WithDetails(info); e == nil {
			return d
		}
	}
	return st
}

// errorInfo is the detail of a strict-mode row failure or a refused
// command, else nil.
func errorInfo(err error) *errdetails.ErrorInfo {
	var re *udf.RowError
	switch {
	case errors.As(err, &re):
		cause := ""
		if re.Err != nil {
			cause = re.Err.Error()
		}
		return &errdetails.ErrorInfo{Reason: ReasonStrictRow, Domain: ErrorDomain, Metadata: map[string]string{
			"row":     strconv.Itoa(re.Row),
			"message": clippedTail(err.Error(), cause),
		}}
	case errors.Is(err, udf.ErrBadCommand):
		return &errdetails.ErrorInfo{Reason: ReasonBadCommand, Domain: ErrorDomain, Metadata: map[string]string{
			"message": clippedTail(err.Error(), problem(err)),
		}}
	}
	return nil
}

// problem is a refused command's message without what leads it: the
// "op NAME: " with which udf.Registry.Prepare wraps an op's refusal, then
// udf.ErrBadCommand's "bad command: ".
func problem(err error) string {
	msg := err.Error()
	if inner := errors.Unwrap(err); inner != nil {
		if lead, ok := strings.CutSuffix(msg, inner.Error()); ok && opLead(lead) {
			msg = inner.Error()
		}
	}
	return strings.TrimPrefix(msg, udf.ErrBadCommand.Error()+": ")
}

// opLead reports whether s is "op NAME: " with NAME a word (letters,
// digits and _), as op names are.
func opLead(s string) bool {
	name, ok := strings.CutPrefix(s, "op ")
	if !ok {
		return false
	}
	if name, ok = strings.CutSuffix(name, ": "); !ok || name == "" {
		return false
	}
	for _, r := range name {
		if !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// clippedTail is tail, the end of msg, as it ends the clipped status
// message (clip.Message(msg)): the same words the message shows, clipped
// the same way. Where msg does not end with tail, or the clipping reaches
// into what leads it, tail clipped alone.
func clippedTail(msg, tail string) string {
	lead, ok := strings.CutSuffix(msg, tail)
	if c := clip.Message(msg); ok && strings.HasPrefix(c, lead) {
		return c[len(lead):]
	}
	return clip.Message(tail)
}

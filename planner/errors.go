package planner

import "fmt"

// Error is a planning error: SQL that parses but cannot run (Status 422), or
// a malformed option (400). Name is the identifier the error is about, so the
// caller can point at its line and column.
type Error struct {
	Status int
	Name   string
	// Offset, when not 0, is the 1-based byte offset in the statement's
	// text of what the error is about (a parameter: parser.Param.Offset),
	// which positions it rather than the first occurrence of Name.
	Offset int
	Msg    string
	// param is the n of a $n that no parameter binds (params.go), else 0.
	param int
}

func (e *Error) Error() string { return e.Msg }

func errf(name, format string, args ...any) error {
	return &Error{Status: 422, Name: name, Msg: fmt.Sprintf(format, args...)}
}

func badf(name, format string, args ...any) error {
	return &Error{Status: 400, Name: name, Msg: fmt.Sprintf(format, args...)}
}

//go:build !linux

package nemesis

import "syscall"

// sysProcAttr: outside Linux a child outlives a harness that is killed;
// a run that ends normally stops every child itself.
func sysProcAttr() *syscall.SysProcAttr { return nil }

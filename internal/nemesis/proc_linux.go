package nemesis

import "syscall"

// sysProcAttr makes a child die with the harness (even if the harness is
// killed), so a run never leaves servers or workers behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// The pod sandbox's process: it holds the pod's namespaces, reaps the
// zombies a shared PID namespace hands it, and exits on SIGINT or SIGTERM.
// No registry is reachable here, so the image is built from this.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if os.Getpid() != 1 {
		os.Stderr.WriteString("pause: warning: not pid 1\n")
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}

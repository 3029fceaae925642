package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// takeSignals returns the channel serve's stop signals arrive on, and
// what releases them: SIGTERM, and SIGINT unless the sidecar exits with
// its parent. Then its parent stops it (SIGTERM, or by exiting), and
// SIGINT is ignored: a terminal's Ctrl-C reaches the whole process group,
// the Spark driver's sidecar included, and must not stop it under the
// session.
func takeSignals(exitWithParent bool) (<-chan os.Signal, func()) {
	sigs := make(chan os.Signal, 2)
	if exitWithParent {
		signal.Ignore(syscall.SIGINT)
		signal.Notify(sigs, syscall.SIGTERM)
	} else {
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	}
	return sigs, func() { signal.Stop(sigs) }
}

// drainOnSignal cancels serve's context at the first signal (the server
// drains its open streams and refuses new ones) and exits the process at
// the second.
func drainOnSignal(sigs <-chan os.Signal, cancel context.CancelFunc, log *zap.Logger) {
	s := <-sigs
	log.Info("signal: draining open streams, refusing new ones", zap.String("signal", s.String()))
	cancel()
	s = <-sigs
	log.Warn("second signal: exiting now", zap.String("signal", s.String()))
	os.Exit(1)
}

// watchParent cancels ctx once this process's parent, ppid at the start,
// has exited (the process is then re-parented, so its parent pid changes).
func watchParent(ctx context.Context, cancel context.CancelFunc, ppid int, log *zap.Logger) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if os.Getppid() != ppid {
				log.Info("parent exited: draining open streams, refusing new ones", zap.Int("parent", ppid))
				cancel()
				return
			}
		}
	}
}

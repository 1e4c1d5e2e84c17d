package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	vtlog "github.com/dolthub/vitess/go/vt/log"
	"github.com/sirupsen/logrus"
)

// RouteLibraryLogs sends the logs of GMS (logrus) and vitess (its log
// package) to l, for a process that serves MySQL (the gateway command, the
// demo). Both libraries log through process-wide loggers, so this changes
// them for the whole process; it is for process assembly, not for library
// code.
//
// Both log ordinary client errors (a syntax error, a duplicate key) at
// warning or error level, which the gateway already reports to the client
// and counts in its metrics: their warnings go to debug, their errors to
// warn. The gateway's own logs say what an operator must act on.
func RouteLibraryLogs(l *slog.Logger) {
	ctx := context.Background()
	logrus.SetOutput(io.Discard)
	// GMS formats a trace line per analyzer step when trace is on: never
	// enable it; debug only when l shows debug (where GMS's warnings go).
	if l.Enabled(ctx, slog.LevelDebug) {
		logrus.SetLevel(logrus.DebugLevel)
	} else {
		logrus.SetLevel(logrus.ErrorLevel)
	}
	logrus.StandardLogger().ReplaceHooks(logrus.LevelHooks{})
	logrus.AddHook(&logrusHook{l: l})
	logf := func(level slog.Level) func(string, ...any) {
		return func(format string, args ...any) {
			if l.Enabled(ctx, level) {
				l.Log(ctx, level, strings.TrimSpace(fmt.Sprintf(format, args...)), "lib", "vitess")
			}
		}
	}
	logp := func(level slog.Level) func(...any) {
		return func(args ...any) {
			if l.Enabled(ctx, level) {
				l.Log(ctx, level, strings.TrimSpace(fmt.Sprint(args...)), "lib", "vitess")
			}
		}
	}
	vtlog.Info, vtlog.Infof = logp(slog.LevelDebug), logf(slog.LevelDebug)
	vtlog.Warning, vtlog.Warningf = logp(slog.LevelDebug), logf(slog.LevelDebug)
	vtlog.Error, vtlog.Errorf = logp(slog.LevelWarn), logf(slog.LevelWarn)
}

// logrusHook forwards GMS's logrus entries to slog.
type logrusHook struct{ l *slog.Logger }

func (h *logrusHook) Levels() []logrus.Level { return logrus.AllLevels }

func (h *logrusHook) Fire(e *logrus.Entry) error {
	level := slog.LevelDebug
	if e.Level <= logrus.ErrorLevel {
		level = slog.LevelWarn
	}
	ctx := context.Background()
	if !h.l.Enabled(ctx, level) {
		return nil
	}
	args := make([]any, 0, 2+2*len(e.Data))
	args = append(args, "lib", "gms")
	for k, v := range e.Data {
		args = append(args, k, v)
	}
	h.l.Log(ctx, level, e.Message, args...)
	return nil
}

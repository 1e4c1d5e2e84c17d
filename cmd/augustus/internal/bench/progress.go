package bench

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows a run live: a progress bar on a terminal, else a line
// every 5 seconds (--progress).
type progress struct {
	w        io.Writer
	bar      *progressbar.ProgressBar
	lines    bool
	total    time.Duration
	lastLine time.Time
	done     bool
}

func newProgress(w io.Writer, mode string, total time.Duration) *progress {
	p := &progress{w: w, total: total, lastLine: time.Now()}
	if mode == "auto" {
		mode = "lines"
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			mode = "bar"
		}
	}
	switch mode {
	case "bar":
		p.bar = progressbar.NewOptions64(total.Milliseconds(),
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription("measuring"),
			progressbar.OptionSetWidth(30),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionShowDescriptionAtLineEnd(),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	case "lines":
		p.lines = true
	}
	return p
}

func (p *progress) update(elapsed time.Duration, calls int64) {
	rate := float64(calls) / max(elapsed.Seconds(), 1e-3)
	switch {
	case p.bar != nil:
		p.bar.Describe(fmt.Sprintf("%d calls, %.0f calls/s", calls, rate))
		_ = p.bar.Set64(min(elapsed.Milliseconds(), p.total.Milliseconds()))
	case p.lines && time.Since(p.lastLine) >= progressInterval:
		p.lastLine = time.Now()
		fmt.Fprintf(p.w, "bench: %s/%s  %d calls  %.0f calls/s\n",
			elapsed.Round(time.Second), p.total, calls, rate)
	}
}

func (p *progress) finish() {
	if p.done {
		return
	}
	p.done = true
	if p.bar != nil {
		_ = p.bar.Finish()
		_ = p.bar.Exit()
	}
}

package coord

import (
	"log/slog"
	"os"
)

func init() {
	if os.Getenv("COORD_LOG") != "" {
		debugLogger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
}

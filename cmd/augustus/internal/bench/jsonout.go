package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// jsonOutput is the --json file, opened before the run so that a path that
// cannot be written fails at once rather than after the measurement.
type jsonOutput struct {
	f       *os.File
	created bool
	written bool
}

func openJSONOutput(path string) (*jsonOutput, error) {
	if path == "" {
		return nil, nil
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("--json %s: is a directory", path)
	}
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--json: cannot write the result: %w", err)
	}
	return &jsonOutput{f: f, created: errors.Is(statErr, fs.ErrNotExist)}, nil
}

func (j *jsonOutput) write(v any) error {
	data, err := jsonIndent(v)
	if err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	if err := j.f.Truncate(0); err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	if _, err := j.f.WriteAt(data, 0); err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	j.written = true
	return nil
}

// close closes the file, removing it if this run created it and wrote
// nothing (an interrupted run leaves no empty result behind).
func (j *jsonOutput) close() error {
	if j == nil {
		return nil
	}
	err := j.f.Close()
	if !j.written && j.created {
		_ = os.Remove(j.f.Name())
	}
	if err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	return nil
}

func jsonIndent(v any) ([]byte, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

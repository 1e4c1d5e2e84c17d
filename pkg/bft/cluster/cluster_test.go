package cluster

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSaveThenLoadRoundTrips(t *testing.T) {
	c := validCluster(t)
	path := filepath.Join(t.TempDir(), FileName)
	require.NoError(t, c.Save(path))
	got, err := Load(path)
	require.NoError(t, err)
	require.Equal(t, c, got)

	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left behind")
}

func TestSaveReplacesAnExistingFile(t *testing.T) {
	c := validCluster(t)
	path := filepath.Join(t.TempDir(), FileName)
	require.NoError(t, c.Save(path))
	c.ClientWindow = 32
	require.NoError(t, c.Save(path))
	got, err := Load(path)
	require.NoError(t, err)
	require.Equal(t, 32, got.ClientWindow)
}

func TestSaveRefusesAnInvalidCluster(t *testing.T) {
	c := validCluster(t)
	c.F = 3
	path := filepath.Join(t.TempDir(), FileName)
	err := c.Save(path)
	require.ErrorIs(t, err, ErrGroupSize)
	_, statErr := os.Stat(path)
	require.ErrorIs(t, statErr, os.ErrNotExist)
}

func TestLoadFillsDefaultsForAbsentTunables(t *testing.T) {
	c := validCluster(t)
	data, err := json.Marshal(c)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	delete(m, "client_window")
	delete(m, "checkpoint_interval")
	delete(m, "log_window")
	delete(m, "sync")
	data, err = json.Marshal(m)
	require.NoError(t, err)
	got, err := Parse(data)
	require.NoError(t, err)
	require.Equal(t, 16, got.ClientWindow)
	require.Equal(t, DefaultCheckpointInterval, got.CheckpointInterval)
	require.Equal(t, DefaultLogWindow, got.LogWindow)
	require.Equal(t, SyncFsync, got.Sync)
	require.False(t, got.NoSync())
}

func TestLoadReadsSyncNone(t *testing.T) {
	c := validCluster(t)
	c.Sync = SyncNone
	path := filepath.Join(t.TempDir(), FileName)
	require.NoError(t, c.Save(path))
	got, err := Load(path)
	require.NoError(t, err)
	require.True(t, got.NoSync())
}

func TestLoadRejectsUnknownFields(t *testing.T) {
	_, err := Parse([]byte(`{"cluster_id": "x", "fault_tolerance": 1}`))
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorContains(t, err, `unknown field "fault_tolerance"`)
}

func TestLoadReportsWhereTheSyntaxErrorIs(t *testing.T) {
	_, err := Parse([]byte("{\n  \"cluster_id\": \"x\",\n  \"f\": 1,\n}"))
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorContains(t, err, "line 4, column 2")

	_, err = Parse([]byte("{\n  \"f\": \"one\"\n}"))
	require.ErrorContains(t, err, "line 2")
}

func TestLoadRejectsTrailingData(t *testing.T) {
	data, err := validCluster(t).Marshal()
	require.NoError(t, err)
	_, err = Parse(append(data, []byte(`{}`)...))
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorContains(t, err, "after the JSON object")
}

func TestLoadValidates(t *testing.T) {
	c := validCluster(t)
	c.Groups[0].Replicas[0].PeerAddr = "nope"
	data, err := json.Marshal(c)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), FileName)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	_, err = Load(path)
	require.ErrorIs(t, err, ErrBadAddress)
	require.ErrorContains(t, err, path)
}

func TestLoadReportsAMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), FileName))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// Package chdb runs SQL on a current ClickHouse engine without a server:
// chDB, ClickHouse built as a library, in a Python process of its own.
//
// The tests use it for the statements spatec and the arms send to the
// ClickHouse 26.x of the authoritative environments, which cannot run
// here. The engine comes from PyPI, pinned and hash-locked by
// requirements.txt, into a virtual environment kept in the user's cache
// under the digest of that file, so it is made once per machine and made
// again only when the file changes.
package chdb

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Requirements is the hash-locked requirements file the environment is
// made from.
//
//go:embed requirements.txt
var Requirements string

//go:embed runner.py
var runnerPy string

// Venv is a virtual environment with chDB installed.
type Venv struct {
	// Dir is the environment's directory.
	Dir string
	// Python is its interpreter.
	Python string
	// Made is how long making it took; 0 when it was already there.
	Made time.Duration
}

// CacheDir is where environments are kept: the user's cache directory
// ($XDG_CACHE_HOME, else ~/.cache) under spatec/chdb.
func CacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding the cache directory for chDB's environment: %w", err)
	}
	return filepath.Join(dir, "spatec", "chdb"), nil
}

// Digest names Requirements: the sha256 of its text.
func Digest() string {
	sum := sha256.Sum256([]byte(Requirements))
	return hex.EncodeToString(sum[:])
}

// completeMark is written last into a finished environment: a directory
// without it was left half made, and is made again, as is one whose
// python3 has gone.
const completeMark = "spatec-complete"

// Prepare returns the environment of Requirements under cacheDir (CacheDir
// when ""), making it when it is missing with python3's venv and pip. Two
// processes that prepare it at once take turns on a lock file; the second
// finds it made.
func Prepare(ctx context.Context, cacheDir string) (*Venv, error) {
	if cacheDir == "" {
		var err error
		if cacheDir, err = CacheDir(); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("making chDB's cache directory: %w", err)
	}
	digest := Digest()
	v := &Venv{Dir: filepath.Join(cacheDir, digest)}
	v.Python = filepath.Join(v.Dir, "bin", "python")

	lock, err := os.OpenFile(v.Dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the lock of chDB's environment: %w", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return nil, fmt.Errorf("locking chDB's environment %s: %w", v.Dir, err)
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN)

	// Made, and its interpreter (a link to the python3 it was made with)
	// still there.
	if _, err := os.Stat(filepath.Join(v.Dir, completeMark)); err == nil {
		if _, err := os.Stat(v.Python); err == nil {
			return v, nil
		}
	}
	start := time.Now()
	if err := os.RemoveAll(v.Dir); err != nil {
		return nil, fmt.Errorf("removing the half-made environment %s: %w", v.Dir, err)
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		return nil, fmt.Errorf("making chDB's environment: python3 is not installed (Debian: apt-get install python3 python3-venv): %w", err)
	}
	if err := run(ctx, python, "-m", "venv", v.Dir); err != nil {
		return nil, fmt.Errorf("making chDB's environment (Debian needs python3-venv): %w", err)
	}
	req := filepath.Join(v.Dir, "requirements.txt")
	if err := os.WriteFile(req, []byte(Requirements), 0o644); err != nil {
		return nil, err
	}
	// Every file installed is checked against a hash of the file, and
	// only wheels are taken: nothing is built.
	if err := run(ctx, v.Python, "-m", "pip", "install", "--quiet", "--no-input", "--disable-pip-version-check",
		"--require-hashes", "--no-deps", "--only-binary", ":all:", "-r", req); err != nil {
		return nil, fmt.Errorf("installing chDB into %s: %w", v.Dir, err)
	}
	if err := os.WriteFile(filepath.Join(v.Dir, completeMark), []byte(digest+"\n"), 0o644); err != nil {
		return nil, err
	}
	v.Made = time.Since(start)
	return v, nil
}

// run runs a command, its output kept for the error it may return.
func run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		if len(msg) > 2000 {
			msg = "…" + msg[len(msg)-2000:]
		}
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, msg)
	}
	return nil
}

package testenv

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"spatec.dev/spatec/exec/engine/docker"
)

// ClickHouseAddr is the ClickHouse the tests use: $SPATEC_TEST_CLICKHOUSE,
// else the server .ci/services starts at 127.0.0.1:9000.
func ClickHouseAddr() string {
	if a := os.Getenv("SPATEC_TEST_CLICKHOUSE"); a != "" {
		return a
	}
	return "127.0.0.1:9000"
}

// RequireClickHouse fails (under CI) or skips the test when ClickHouse does
// not answer at ClickHouseAddr.
func RequireClickHouse(t testing.TB) {
	t.Helper()
	Require(t, "ClickHouse at "+ClickHouseAddr(), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{ClickHouseAddr()}})
		if err != nil {
			return err
		}
		defer conn.Close()
		return conn.Ping(ctx)
	})
}

// Docker connects to the local Docker engine for the length of the test,
// or fails (under CI) or skips it when there is none.
func Docker(t testing.TB) *docker.Engine {
	t.Helper()
	var e *docker.Engine
	Require(t, "docker engine", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		e, err = docker.New(ctx)
		return err
	})
	t.Cleanup(func() { e.Close() })
	return e
}

package main

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// childEnv makes the test binary a child of TestGoRedisLogsNeverReachStderr:
// "main" runs relock's main on the binary's arguments, as a user runs
// relock; "call" runs that test alone, which runs relock in process as the
// other tests do.
const childEnv = "RELOCK_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "main" {
		main()
	}
	quietRedisLogs() // the tests run relock as main does
	os.Exit(m.Run())
}

// go-redis logs its failed dials to the process's stderr; relock says what
// failed itself, so its users, and the tests' output, see relock's lines
// only.
func TestGoRedisLogsNeverReachStderr(t *testing.T) {
	// Long enough a node timeout for go-redis to give up dialling (and log)
	// a few times.
	args := []string{"--nodes", "127.0.0.1:1", "--node-timeout", "500ms", "inspect", "x"}
	if os.Getenv(childEnv) == "call" {
		call("", args...)
		return
	}
	for _, child := range []struct {
		mode string
		args []string
		want int // the child's exit status
	}{
		{"main", args, exitNodes},
		{"call", []string{"-test.run=^TestGoRedisLogsNeverReachStderr$", "-test.count=1"}, 0},
	} {
		cmd := exec.Command(os.Args[0], child.args...)
		cmd.Env = append(os.Environ(), childEnv+"="+child.mode)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		code := 0
		if err := cmd.Run(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("%s: %v", child.mode, err)
			}
			code = ee.ExitCode()
		}
		if code != child.want || strings.Contains(stderr.String(), "redis: ") {
			t.Errorf("%s: exit %d, want %d; stderr, which must hold no line of go-redis's:\n%s", child.mode, code, child.want, stderr.String())
		}
	}
}

// Package model_test keeps model/relock.pml honest: the model records the
// sha256 of each script it stands for, and this test fails when a script
// changes without the model's line, so the two are updated together.
package model_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// checksumLine is a line of relock.pml naming a script and its digest.
var checksumLine = regexp.MustCompile(`^/\* checksum (\S+) sha256:([0-9a-f]{64}) \*/$`)

func TestModelChecksums(t *testing.T) {
	f, err := os.Open("relock.pml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := 0
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		m := checksumLine.FindStringSubmatch(lines.Text())
		if m == nil {
			continue
		}
		seen++
		script, want := m[1], m[2]
		data, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(script)))
		if err != nil {
			t.Errorf("%s: %v", script, err)
			continue
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("%s changed (sha256 %s, the model records %s): update model/relock.pml to the new script, then its checksum line", script, got, want)
		}
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}
	if seen == 0 {
		t.Fatal("relock.pml records no script checksums")
	}
}

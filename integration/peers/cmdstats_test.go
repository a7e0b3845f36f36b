package peers

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestByCommandSinceLeavesOutInfoAndIdleCommands(t *testing.T) {
	before := serverStats{byCommand: map[string]int64{"evalsha": 10, "info": 3, "ping": 4}}
	after := serverStats{byCommand: map[string]int64{"evalsha": 16, "info": 5, "ping": 4, "publish": 2}}
	assert.Equal(t, map[string]int64{"evalsha": 6, "publish": 2}, after.byCommandSince(before))
}

func TestCommandsPerAcquisition(t *testing.T) {
	calls := map[string]int64{"evalsha": 6}
	addCommands(calls, map[string]int64{"evalsha": 2, "hset": 4})
	assert.Equal(t, map[string]float64{"evalsha": 2, "hset": 1}, commandsPer(calls, 4))
	assert.Nil(t, commandsPer(calls, 0), "no acquisition: nothing to divide by")
}

func TestFmtByCommandOrdersAndFoldsRareCommands(t *testing.T) {
	got := fmtByCommand(map[string]float64{
		"hmget": 2.12, "evalsha": 3.01, "del": 1, "exists": 1, "ping": 0.03, "subscribe": 0.04,
	})
	assert.Equal(t, "EVALSHA 3.0, HMGET 2.1, DEL 1.0, EXISTS 1.0, others 0.1", got)
	assert.Equal(t, "SET 1.0, others <0.05", fmtByCommand(map[string]float64{"set": 1, "hello": 0.01}))
	assert.Equal(t, "–", fmtByCommand(nil))
}

package peers

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWantsLibBySubstringOrExactName(t *testing.T) {
	all := Config{}
	assert.True(t, all.wantsLib(NameRelockSplit), "no filter: every library")

	sub := Config{Libs: []string{"relock"}}
	assert.True(t, sub.wantsLib(NameRelock))
	assert.True(t, sub.wantsLib(NameRelockSplit), "a substring selects every name containing it")
	assert.False(t, sub.wantsLib("redsync (defaults)"))

	exact := Config{Libs: []string{"=RELOCK", "redsync"}}
	assert.True(t, exact.wantsLib(NameRelock), "=NAME selects that name, in any case")
	assert.False(t, exact.wantsLib(NameRelockSplit), "=NAME selects no longer name")
	assert.True(t, exact.wantsLib("redsync (2 ms retry)"), "beside a substring")
}

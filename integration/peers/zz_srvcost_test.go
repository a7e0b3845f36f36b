package peers

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relock-go/relock/lock"
)

func srvCPU(t *testing.T, c *redis.Client) float64 {
	info := c.Info(context.Background(), "cpu").Val()
	var sum float64
	for _, line := range strings.Split(info, "\r\n") {
		for _, k := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			if strings.HasPrefix(line, k) {
				v, _ := strconv.ParseFloat(strings.TrimPrefix(line, k), 64)
				sum += v
			}
		}
	}
	return sum
}

func TestZZServerCost(t *testing.T) {
	addr := "127.0.0.1:7701"
	admin := redis.NewClient(&redis.Options{Addr: addr})
	const n = 20000
	for _, lib := range Libs(lock.Options{}) {
		if lib.ContendedOnly || lib.Name != NameRelock {
			continue
		}
		p, err := lib.NewProcess([]string{addr}, 4)
		if err != nil {
			t.Fatal(err)
		}
		m := p.NewMutex("cost-" + lib.Name)
		ctx := context.Background()
		for i := 0; i < 200; i++ {
			_ = m.Lock(ctx)
			_ = m.Unlock(ctx)
		}
		admin.ConfigResetStat(ctx)
		before := srvCPU(t, admin)
		start := time.Now()
		for i := 0; i < n; i++ {
			c, cancel := context.WithTimeout(ctx, time.Second)
			if err := m.Lock(c); err != nil {
				t.Fatal(err)
			}
			if err := m.Unlock(c); err != nil {
				t.Fatal(err)
			}
			cancel()
		}
		el := time.Since(start)
		after := srvCPU(t, admin)
		stats := admin.Info(ctx, "commandstats").Val()
		var lines []string
		for _, l := range strings.Split(stats, "\r\n") {
			if strings.HasPrefix(l, "cmdstat_") {
				parts := strings.SplitN(l, ",", 4)
				lines = append(lines, parts[0]+","+parts[2])
			}
		}
		st := admin.Info(ctx, "stats").Val()
		for _, l := range strings.Split(st, "\r\n") {
			if strings.HasPrefix(l, "total_connections_received") || strings.HasPrefix(l, "total_net_input_bytes") || strings.HasPrefix(l, "total_net_output_bytes") || strings.HasPrefix(l, "total_reads_processed") || strings.HasPrefix(l, "total_writes_processed") {
				fmt.Println("   ", l)
			}
		}
		fmt.Printf("%-26s server CPU/cycle %5.1f µs  wall/cycle %5.1f µs  %v\n", lib.Name, (after-before)/n*1e6, float64(el.Microseconds())/n, lines)
		p.Close()
	}
}

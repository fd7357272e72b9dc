package lab

import (
	"fmt"
	"testing"
	"time"
)

// BurstKillPromote is the seed lesson's failover, which loses writes a
// Redis master acknowledged: master's replica is paused and cut off, burst
// runs while the master keeps taking (and acknowledging) the canary's
// writes, the master is killed, and the replica resumes and is promoted
// without those writes.
//
// acknowledged reads how many canary writes to master were acknowledged.
// BurstKillPromote returns that count when the replica was paused and when
// the master was killed: the most read within inFlight after the kill,
// since writes in flight when it landed may still be counted.
func (c *RedisCluster) BurstKillPromote(t testing.TB, master, replica RedisNode, inFlight time.Duration, acknowledged func() uint64, burst func()) (atPause, atKill uint64) {
	t.Helper()
	c.Pause(t, replica.Port)
	// A paused replica still receives the replication stream into its
	// socket buffer and applies it on resume; cut the link on the master
	// so that what the master acknowledges from now on stays there.
	c.CLI(t, master.Port, "client", "kill", "type", "replica")
	resumed := false
	defer func() {
		if !resumed {
			c.Resume(t, replica.Port)
		}
	}()
	atPause = acknowledged()
	burst()
	atKill = acknowledged()
	c.Kill(t, master.Port)
	// Read until inFlight has passed, the last time after it, keeping the
	// most: the dead master's count may go once the cluster drops it.
	for end := time.Now().Add(inFlight); ; time.Sleep(100 * time.Millisecond) {
		atKill = max(atKill, acknowledged())
		if !time.Now().Before(end) {
			break
		}
	}
	c.Resume(t, replica.Port)
	resumed = true
	RedisWaitFor(t, 30*time.Second, "replica promoted", func() error {
		for _, n := range c.Masters(t) {
			if n.ID == replica.ID {
				return nil
			}
		}
		return fmt.Errorf("%s is not a master yet", replica.Addr)
	})
	return atPause, atKill
}

package pandohost

import "syscall"

// KillPluginForTest kills the plugin process as a crash would (SIGKILL),
// without telling the client.
func KillPluginForTest(a *Adapter) error {
	p := a.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client == nil {
		return nil
	}
	cfg := p.client.ReattachConfig()
	if cfg == nil || cfg.Pid == 0 {
		return nil
	}
	return syscall.Kill(cfg.Pid, syscall.SIGKILL)
}

// ByteChannelsForTest is how many byte channels the plugin connected.
func ByteChannelsForTest(a *Adapter) int64 { return a.p.channelsUsed.Load() }

// CallsOnChannelsForTest is how many unary calls were answered on call
// channels.
func CallsOnChannelsForTest(a *Adapter) int64 { return a.p.callsOnChannels.Load() }

package pandohost

import "syscall"

// KillPluginForTest kills the plugin process as a crash would (SIGKILL),
// without telling the client.
func KillPluginForTest(a *Adapter) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.client == nil {
		return nil
	}
	cfg := a.client.ReattachConfig()
	if cfg == nil || cfg.Pid == 0 {
		return nil
	}
	return syscall.Kill(cfg.Pid, syscall.SIGKILL)
}

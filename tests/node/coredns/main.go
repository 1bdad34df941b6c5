// Command testdns is the test cluster's DNS server: CoreDNS with only the plugins the cluster
// uses, so that no query ever leaves the machine (there is no `forward` plugin to send one).
//
// It serves the cluster's names (the kubernetes plugin) and the test zone `outside.test`, whose
// names stand for hosts of "the outside" (the hosts plugin). The Corefile is written by
// scripts/cluster; see docs/testing.md.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

// The order plugins run in, a subset of CoreDNS's own plugin.cfg order.
var directives = []string{
	"bind",
	"ready",
	"health",
	"errors",
	"log",
	"cache",
	"hosts",
	"kubernetes",
}

func init() {
	dnsserver.Directives = directives
}

func main() {
	coremain.Run()
}

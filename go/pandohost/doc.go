// Package pandohost loads Pando's runtime adapters, WebAssembly
// components, from a Go program: it starts `pando-host serve` through
// hashicorp/go-plugin and calls the adapter over gRPC, with the reference
// adapter's method set and the contract's types (package api). See
// docs/go.md in the repository.
package pandohost

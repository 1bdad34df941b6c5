package pandohost

import (
	"testing"
	"time"
)

// grpc-timeout as grpc-go writes it (and serve/src/call.rs reads it): at
// most eight digits, rounded up, in the finest unit that holds the value.
func TestGRPCTimeoutIsWrittenAsGRPCWritesIt(t *testing.T) {
	for _, c := range []struct {
		in   time.Duration
		want string
	}{
		{time.Nanosecond, "1n"},
		{99_999_999 * time.Nanosecond, "99999999n"},
		{100 * time.Millisecond, "100000u"},
		{1500 * time.Microsecond, "1500000n"},
		{2 * time.Minute, "120000m"},
		{100_000 * time.Second, "100000S"},
		{30 * time.Hour, "108000S"},
		{2_000_000 * time.Hour, "2000000H"},
		{100_000_001 * time.Nanosecond, "100001u"},
	} {
		if got := grpcTimeout(c.in); got != c.want {
			t.Errorf("grpcTimeout(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

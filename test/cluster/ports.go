package cluster

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// minFixedPort is the lowest port FixedPortAddr hands out.
const minFixedPort = 10000

// FixedPortAddr returns a 127.0.0.1 address whose port nobody listens on
// now and which lies below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), for a server that must be told its
// port in advance (an S3 endpoint). A port from a :0 probe is an
// ephemeral one: the kernel may hand it to the next :0 bind, such as a
// block server of the very `tessera up` it was chosen for, which then
// took the S3 endpoint's port (a TestS3BesideFUSE run failed so: "bind:
// address already in use"). No :0 bind gets a port below the range.
func FixedPortAddr() (string, error) {
	low := ephemeralLow()
	if low-minFixedPort < 1000 {
		return "", fmt.Errorf("cluster: the ephemeral port range starts at %d: no room below it for fixed ports from %d", low, minFixedPort)
	}
	const tries = 100
	for range tries {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(minFixedPort+rand.IntN(low-minFixedPort)))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue // taken: another
		}
		l.Close()
		return addr, nil
	}
	return "", fmt.Errorf("cluster: no free port from %d to %d in %d tries", minFixedPort, low-1, tries)
}

// ephemeralLow is the first port of the kernel's ephemeral range (32768,
// Linux's default, when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < 1 || n > 65535 {
		return 32768
	}
	return n
}

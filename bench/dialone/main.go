// Command dialone is the floor of a one-shot call: dial a Unix socket,
// write the request line read from a file, read one line back, print it.
// bench/run.sh times it (built static) beside socat and primalscope.
package main

import (
	"bufio"
	"net"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		os.Stderr.WriteString("usage: dialone SOCKET REQUEST-FILE\n")
		os.Exit(2)
	}
	req, err := os.ReadFile(os.Args[2])
	if err != nil {
		os.Exit(2)
	}
	c, err := net.Dial("unix", os.Args[1])
	if err != nil {
		os.Exit(3)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(req); err != nil {
		os.Exit(3)
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		os.Exit(3)
	}
	os.Stdout.Write(line)
}

// Command dialone is the floor of a one-shot call: dial a Unix socket, write
// one line, read one line, print it. bench/run.sh times it (built static)
// beside socat and primalscope.
package main

import (
	"bufio"
	"net"
	"os"
)

func main() {
	if len(os.Args) != 3 {
		os.Stderr.WriteString("usage: dialone SOCKET LINE\n")
		os.Exit(2)
	}
	c, err := net.Dial("unix", os.Args[1])
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(3)
	}
	defer c.Close()
	if _, err := c.Write([]byte(os.Args[2] + "\n")); err != nil {
		os.Exit(3)
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		os.Exit(3)
	}
	os.Stdout.Write(line)
}

package render_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/charmbracelet/colorprofile"

	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/themes"
)

func ExampleJSON() {
	in := `{"jsonrpc":"2.0","id":1,"result":{"ok":true,"tags":[],"note":"\u001b is kept escaped"}}`
	if err := render.JSON(os.Stdout, strings.NewReader(in), render.Options{Indent: render.DefaultIndent}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {
	//   "jsonrpc": "2.0",
	//   "id": 1,
	//   "result": {
	//     "ok": true,
	//     "tags": [],
	//     "note": "\u001b is kept escaped"
	//   }
	// }
}

func ExampleJSON_invalid() {
	err := render.JSON(os.Stdout, strings.NewReader("[1,\n 2 \x1b[2J]"), render.Options{})
	fmt.Println(err)
	// Output:
	// [1,2\x1b[2J]
	// invalid JSON at line 2, column 4 (byte 7): unexpected byte 0x1b, expected , or ]
}

func ExampleSanitize() {
	fmt.Println(render.Sanitize("name\x1b]52;c;cm0gLXJmIH4=\x07\n"))
	// Output:
	// name\x1b]52;c;cm0gLXJmIH4=\x07\n
}

func ExampleHighlighter_Line() {
	th := themes.Dark()
	h := render.NewHighlighter(&th.JSON, colorprofile.ANSI256)
	fmt.Printf("%q\n", h.Line(`  "id": 7,`))
	// Output:
	// "  \x1b[0;38;5;183m\"id\"\x1b[0;38;5;189m: \x1b[0;38;5;216m7\x1b[0;38;5;189m,\x1b[0m"
}

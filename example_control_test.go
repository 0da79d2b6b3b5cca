package briefd_test

import (
	"fmt"

	"github.com/briefd/briefd"
)

// Plain OpenAI messages have no ids; NumberMessages gives each its
// position id, the same at every turn for an agent that appends.
func ExampleNumberMessages() {
	history := []briefd.Message{
		{Role: briefd.RoleSystem, Content: briefd.Text("You are a helpful agent.")},
		{Role: briefd.RoleUser, Content: briefd.Text("Find the flaky test.")},
		{Role: briefd.RoleAssistant, Content: briefd.Text("Running the suite.")},
	}
	numbered, n, err := briefd.NumberMessages(history)
	if err != nil {
		panic(err)
	}
	fmt.Println(n, numbered[0].ID, numbered[2].ID, briefd.Validate(numbered, briefd.Limits{}))
	// Output:
	// 3 m0001 m0003 <nil>
}

// A client's control, a conversation's and a publish's are laid over one
// another: set fields win, pins add up.
func ExampleControl_Merge() {
	client := briefd.Control{TriggerFraction: 0.5}
	conversation := briefd.Control{KeepTokens: 8000, Pin: []string{"m0004"}}
	publish := briefd.Control{Mode: briefd.ModeNow, Focus: "the database migration"}
	ctl := client.Merge(conversation).Merge(publish)
	fmt.Printf("%s %.2f %d %v %q %v\n", ctl.Mode, ctl.TriggerFraction, ctl.KeepTokens, ctl.Pin, ctl.Focus, ctl.Validate())
	// Output:
	// now 0.50 8000 [m0004] "the database migration" <nil>
}

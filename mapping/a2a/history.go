package a2a

import (
	a2asdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// EncodeHistory renders a history page as the chatkit A2A history shape
// (the convention its adapter reads; A2A itself has no such call):
// {"tasks":[Task, ...], "nextPageToken": "<older page>"}, tasks oldest
// first, one per run, each with its status, its history (user messages;
// the assistant's tool calls and reasoning, and tool results, as agent
// messages) and its answers as artifacts; a task still working carries its
// resume cursor in metadata.lastEventId, and one a regenerate or an edit
// discarded (in a history that asked for them) metadata.superseded. Tasks
// are 0.3 objects.
func EncodeHistory(p *bridge.HistoryPage) ([]byte, error) {
	if p == nil {
		return nil, bridge.Errorf(bridge.CodeInternal, "a2a: nil history page")
	}
	b := append(make([]byte, 0, 1024), `{"tasks":[`...)
	for i, t := range HistoryTasks(p) {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendTask(b, t, V03, nil)
	}
	b = append(b, ']')
	if p.HasMore && p.Cursor != "" {
		b = append(b, `,"nextPageToken":`...)
		b = wire.AppendString(b, p.Cursor)
	}
	return append(b, '}'), nil
}

// HistoryTasks builds the tasks of a history page, oldest first.
func HistoryTasks(p *bridge.HistoryPage) []*a2asdk.Task {
	byRun := map[string][]*bridge.Message{}
	for i := range p.Messages {
		m := &p.Messages[i]
		if m.RunID != "" {
			byRun[m.RunID] = append(byRun[m.RunID], m)
		}
	}
	tasks := make([]*a2asdk.Task, 0, len(p.Runs))
	for _, r := range p.Runs {
		if r == nil {
			continue
		}
		tasks = append(tasks, historyTask(r, byRun[r.ID]))
	}
	return tasks
}

func historyTask(r *bridge.Run, msgs []*bridge.Message) *a2asdk.Task {
	b := &TaskBuilder{id: r.ID, contextID: r.SessionID}
	t := &a2asdk.Task{ID: a2asdk.TaskID(r.ID), ContextID: r.SessionID, Status: a2asdk.TaskStatus{State: taskState(r.Status)},
		History: []*a2asdk.Message{}}
	ts := r.Created
	if !r.Finished.IsZero() {
		ts = r.Finished
	}
	t.Status.Timestamp = &ts
	answers := 0
	for i, m := range msgs {
		id := m.ID
		if i == 0 && m.Role == bridge.RoleUser && r.ClientRunID != "" {
			id = r.ClientRunID
		}
		switch m.Role {
		case bridge.RoleUser:
			t.History = append(t.History, b.message(id, a2asdk.MessageRoleUser, sdkParts(m.Parts)))
		case bridge.RoleAssistant:
			var process a2asdk.ContentParts
			text := ""
			for j := range m.Parts {
				switch p := &m.Parts[j]; p.Type {
				case bridge.PartText, bridge.PartRefusal:
					text += p.Text
				default:
					if sp, ok := SDKPart(p); ok {
						process = append(process, sp)
					}
				}
			}
			for j := range m.ToolCalls {
				process = append(process, toolCallPart(&m.ToolCalls[j]))
			}
			if len(process) > 0 {
				t.History = append(t.History, b.message(id, a2asdk.MessageRoleAgent, process))
			}
			if text != "" {
				answers++
				t.Artifacts = append(t.Artifacts, &a2asdk.Artifact{ID: a2asdk.ArtifactID(answerID(answers)), Name: "answer",
					Parts: a2asdk.ContentParts{a2asdk.TextPart{Text: text}}})
			}
		case bridge.RoleTool:
			tr := &bridge.ToolResult{CallID: m.ToolCallID, Name: m.Name, Content: m.Parts, IsError: m.IsError}
			t.History = append(t.History, b.message(id, a2asdk.MessageRoleAgent, a2asdk.ContentParts{toolResultPart(tr)}))
		}
	}
	if r.Status != bridge.StatusCompleted && r.Status != bridge.StatusRunning && r.Reason != "" {
		t.Status.Message = b.message(r.ID+":status", a2asdk.MessageRoleAgent, a2asdk.ContentParts{a2asdk.TextPart{Text: r.Reason}})
	}
	meta := map[string]any{}
	if r.Status == bridge.StatusRunning && r.LastSeq > 0 {
		meta["lastEventId"] = bridge.EventID(r.ID, r.LastSeq)
	}
	if u := usageMeta(&r.Usage); u != nil {
		meta["usage"] = u
	}
	if len(r.Dropped) > 0 {
		meta["dropped"] = r.Dropped
	}
	if r.Superseded {
		meta["superseded"] = true
	}
	if len(meta) > 0 {
		t.Metadata = meta
	}
	return t
}

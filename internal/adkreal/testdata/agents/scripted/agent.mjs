import { LlmAgent, BaseLlm } from '@google/adk';

// FakeLlm answers "turn <n>: <last user text>", n counting the user turns
// the request carries (so a test sees whether the session kept the first).
class FakeLlm extends BaseLlm {
  constructor() { super({ model: 'fake' }); }
  async *generateContentAsync(req, stream) {
    const users = (req.contents || []).filter((c) => c.role === 'user' && (c.parts || []).some((p) => p.text));
    const last = users[users.length - 1];
    const text = (last?.parts || []).map((p) => p.text || '').join('');
    const answer = `turn ${users.length}: ${text}`;
    if (stream) {
      for (const w of answer.split(/(?<= )/)) yield { content: { role: 'model', parts: [{ text: w }] }, partial: true };
    }
    yield { content: { role: 'model', parts: [{ text: answer }] }, turnComplete: true,
      usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 2 } };
  }
  async connect() { throw new Error('no live connection'); }
}

export const rootAgent = new LlmAgent({ name: 'scripted', model: new FakeLlm(), instruction: 'be scripted' });

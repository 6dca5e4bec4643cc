import { LlmAgent, BaseLlm, FunctionTool, LongRunningFunctionTool } from '@google/adk';

// get_weather is the agent's own tool (the conventions suite's agent tool
// loop): it answers every city the same.
const getWeather = new FunctionTool({
  name: 'get_weather',
  description: 'The weather in a city.',
  parameters: { type: 'OBJECT', properties: { city: { type: 'STRING' } }, required: ['city'] },
  execute: (args) => ({ city: args.city, temp_c: 21, sky: 'clear' }),
});

// client_weather is long-running and returns nothing: the agent asks the
// client for its result (a client tool loop). ADK sends no
// functionResponse for it, and the invocation ends at the call.
const clientWeather = new LongRunningFunctionTool({
  name: 'client_weather',
  description: 'The weather in a city, which the client looks up.',
  parameters: { type: 'OBJECT', properties: { city: { type: 'STRING' } }, required: ['city'] },
  execute: () => undefined,
});

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// FakeLlm answers "turn <n>: <last user text>", n counting the user turns
// the request carries (so a test sees whether the session kept the first).
// A text with the word "slow" streams a word every 15 ms (to stop, or read
// the history, in the middle of an answer). "weather:<city>" calls
// get_weather, and its result gets "The weather in <city>: clear, 21 C.".
// "client:<city>" calls client_weather (the client's tool), and the
// client's result gets "the tool said: <response JSON>".
class FakeLlm extends BaseLlm {
  constructor() { super({ model: 'fake' }); }
  async *generateContentAsync(req, stream) {
    const contents = req.contents || [];
    const users = contents.filter((c) => c.role === 'user' && (c.parts || []).some((p) => p.text));
    const last = users[users.length - 1];
    const text = (last?.parts || []).map((p) => p.text || '').join('');
    const result = (contents[contents.length - 1]?.parts || []).find((p) => p.functionResponse);
    if (!result && text.startsWith('client:')) {
      yield { content: { role: 'model', parts: [{ functionCall: { id: 'call-client-1', name: 'client_weather', args: { city: text.slice(7) } } }] },
        turnComplete: true, usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1 } };
      return;
    }
    if (result && result.functionResponse.name === 'client_weather') {
      yield { content: { role: 'model', parts: [{ text: `the tool said: ${JSON.stringify(result.functionResponse.response)}` }] },
        turnComplete: true, usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 2 } };
      return;
    }
    if (!result && text.startsWith('weather:')) {
      yield { content: { role: 'model', parts: [{ functionCall: { id: 'call-weather-1', name: 'get_weather', args: { city: text.slice(8) } } }] },
        turnComplete: true, usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1 } };
      return;
    }
    const answer = result
      ? `The weather in ${result.functionResponse.response?.city}: clear, 21 C.`
      : `turn ${users.length}: ${text}`;
    const slow = /\bslow\b/.test(text) && !result;
    if (stream) {
      for (const w of answer.split(/(?<= )/)) {
        if (slow) await pause(15);
        yield { content: { role: 'model', parts: [{ text: w }] }, partial: true };
      }
    }
    yield { content: { role: 'model', parts: [{ text: answer }] }, turnComplete: true,
      usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 2 } };
  }
  async connect() { throw new Error('no live connection'); }
}

export const rootAgent = new LlmAgent({ name: 'scripted', model: new FakeLlm(), instruction: 'be scripted', tools: [getWeather, clientWeather] });

import { describe, expect, it } from 'vitest';
import { loadSchema } from '../../../schemas/validate.ts';
import { VN_AGENT_DEFAULTS } from './run.ts';

type Node = { default?: unknown; properties?: Record<string, Node> };

describe('vn-agent defaults', () => {
  it('are the defaults the configuration schema documents', () => {
    const props = (loadSchema('vnAgentConfig') as Node).properties!;
    expect(props.host!.default).toBe(VN_AGENT_DEFAULTS.host);
    expect(props.port!.default).toBe(VN_AGENT_DEFAULTS.port);
    expect(props.stateDir!.default).toBe(VN_AGENT_DEFAULTS.stateDir);
    expect(props.kubeletInsecureSkipVerify!.default).toBe(VN_AGENT_DEFAULTS.kubeletInsecureSkipVerify);
    expect(props.ops!.properties!.host!.default).toBe(VN_AGENT_DEFAULTS.ops.host);
    expect(props.ops!.properties!.port!.default).toBe(VN_AGENT_DEFAULTS.ops.port);
  });
});

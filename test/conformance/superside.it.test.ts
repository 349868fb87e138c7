/**
 * The super side of `npm run conformance -- --all` against a real super cluster: its simulated nodes are cordoned and
 * the real node's taint lifted for the run, and everything is put back afterwards, a node cordoned beforehand
 * included (left cordoned).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { R } from '../../core/kube/resources.ts';
import { REAL_NODE_LABEL, REAL_NODE_TAINT } from '../../core/dev/local/realnode.ts';
import { startTestSuper, type TestSuper } from '../harness.ts';
import { prepareSuperRun, type SuiteNode } from './superside.ts';

describe('prepareSuperRun on a real super cluster', () => {
  let t: TestSuper;
  const state = async () =>
    Object.fromEntries(
      (await t.client.list<SuiteNode>(R.nodes)).items.map((n) => [
        n.metadata!.name!,
        { unschedulable: !!n.spec?.unschedulable, taints: (n.spec?.taints ?? []).map((x) => x.key).sort() },
      ]),
    );

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 3 });
  }, 240_000);
  afterAll(async () => t?.stop());

  it('cordons the simulated nodes and lifts the real-node taint, then puts both back', async () => {
    const [a, b, c] = (await t.client.list<SuiteNode>(R.nodes)).items.map((n) => n.metadata!.name!).sort();
    // c stands in for a real node: its label and taint; b was cordoned by someone before the run
    const real = await t.client.get<SuiteNode>(R.nodes, undefined, c!);
    real.metadata!.labels = { ...real.metadata!.labels, [REAL_NODE_LABEL]: 'true' };
    real.spec = { ...real.spec, taints: [...(real.spec?.taints ?? []), { ...REAL_NODE_TAINT }] };
    await t.client.update(R.nodes, real);
    await t.client.patch(R.nodes, undefined, b!, { spec: { unschedulable: true } }, 'merge');
    const before = await state();

    const opened = await prepareSuperRun(t.client, REAL_NODE_LABEL, REAL_NODE_TAINT);
    expect(opened.changes).toEqual({ cordon: [a], untaint: [c] });
    const during = await state();
    expect(during[a!]!.unschedulable).toBe(true);
    expect(during[b!]!.unschedulable).toBe(true);
    expect(during[c!]).toEqual({
      unschedulable: false,
      taints: before[c!]!.taints.filter((k) => k !== REAL_NODE_LABEL),
    });

    await opened.restore();
    expect(await state()).toEqual(before);
  });
});

import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import type { Command } from 'commander';
import type { Artifact, ParseError, SourceDocument } from '../../../gitops/artifact.ts';
import type { KubeObject } from '../../kube/client.ts';
import { R } from '../../kube/resources.ts';
import { SOURCE_LABEL } from '../../../gitops/applier/objects.ts';
import { readYamlDocuments } from '../../../schemas/load.ts';
import { formatErrors, validate } from '../../../schemas/validate.ts';
import type { TenantPolicy } from '../../tenancy/policy.ts';
import type { VirtualCluster } from '../../api/virtualcluster.ts';
import { CliError } from './vcs.ts';
import { clusterClient } from './kubeconfig.ts';

/** readDirArtifact reads every YAML/JSON file under dir into an artifact, as the git source would. */
export async function readDirArtifact(dir: string): Promise<Artifact> {
  const { contentDigest, parseManifests } = await import('../../../gitops/source/source.ts');
  const root = resolve(dir);
  let st;
  try {
    st = statSync(root);
  } catch {
    throw new CliError(`${dir}: no such directory`);
  }
  if (!st.isDirectory()) throw new CliError(`${dir}: not a directory`);
  const files: Array<{ path: string; content: Uint8Array }> = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.name.startsWith('.')) continue;
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.(ya?ml|json)$/.test(e.name)) files.push({ path: relative(root, p), content: readFileSync(p) });
    }
  };
  walk(root);
  files.sort((a, b) => a.path.localeCompare(b.path));
  const documents: SourceDocument[] = [];
  const parseErrors: ParseError[] = [];
  for (const f of files) {
    const r = parseManifests(f.path, Buffer.from(f.content).toString('utf8'));
    documents.push(...r.documents);
    if (r.error) parseErrors.push(r.error);
  }
  return {
    url: `file://${root}`,
    ref: 'working-tree',
    revision: 'working-tree',
    digest: contentDigest(files),
    path: '.',
    documents,
    parseErrors,
    fetchedAt: new Date().toISOString(),
  };
}

async function urlArtifact(url: string, ref: string, path: string): Promise<Artifact> {
  const { GitSourceFetcher } = await import('../../../gitops/source/source.ts');
  const cache = mkdtempSync(join(tmpdir(), 'vc-diff-'));
  try {
    // The CLI fetches, as its user, a URL its user typed: private addresses are not the manager's to guard here.
    const f = new GitSourceFetcher({ cacheRoot: cache, timeoutMs: 30_000, addresses: { allowPrivateAddresses: true } });
    const r = /^[0-9a-f]{40}$/.test(ref)
      ? { commit: ref }
      : ref.startsWith('tag:')
        ? { tag: ref.slice(4) }
        : { branch: ref };
    return await f.artifact({ url, ref: r, path });
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
}

/** readPolicyFile reads the TenantPolicy documents of a YAML file, each checked against its schema. */
function readPolicyFile(file: string): TenantPolicy[] {
  const out: TenantPolicy[] = [];
  for (const doc of readYamlDocuments(file, CliError)) {
    const p = doc as TenantPolicy | null;
    if (!p || p.kind !== 'TenantPolicy') continue;
    const errors = validate('tenantPolicy', p);
    if (errors.length) throw new CliError(formatErrors(`${file}: TenantPolicy ${p.metadata?.name ?? '?'}`, errors));
    out.push(p);
  }
  return out;
}

/** oneSource is the directory a command reads: its argument or -f/--file, exactly one of them. */
function oneSource(arg: string | undefined, file: string | undefined, command: string): string {
  if (arg && file) throw new CliError(`vc ${command}: give the directory as an argument or with -f, not both`);
  if (!arg && !file) throw new CliError(`vc ${command}: which directory? give -f DIR (or DIR as the argument)`);
  return (arg ?? file)!;
}

interface ValidateFlags {
  policy: string[];
  file?: string;
  kubeconfig?: string;
  context?: string;
  source?: string;
  existing?: boolean;
}

/**
 * simulateExisting prints, for every VirtualCluster on the meta cluster whose admission the proposed policies change
 * or leave refused, one line and its reasons; it fails when a tenant admitted today would be refused.
 */
async function simulateExisting(dir: string | undefined, o: ValidateFlags): Promise<void> {
  if (dir) throw new CliError('vc validate --existing checks the live tenants: give no directory');
  if (!o.policy.length) throw new CliError('vc validate --existing: which proposed policies? give --policy FILE');
  const { readNamespaceLabelsOf, readTenantPolicies, simulatePolicies } =
    await import('../../../gitops/applier/policy.ts');
  const proposed = o.policy.flatMap(readPolicyFile);
  if (!proposed.length) throw new CliError(`${o.policy.join(', ')}: no TenantPolicy documents found`);
  const c = await clusterClient(o);
  try {
    const live = await readTenantPolicies(c);
    if (!live) throw new CliError('the meta cluster: cannot list TenantPolicies (ask for read access to them)');
    const tenants = (await c.list<VirtualCluster>(R.virtualclusters)).items;
    const labels = await readNamespaceLabelsOf(
      c,
      tenants.map((t) => t.metadata?.namespace ?? ''),
    );
    const impact = simulatePolicies(tenants, live, proposed, labels);
    const verb = {
      'newly-refused': 'would be refused',
      'still-refused': 'is and stays refused',
      'now-admitted': 'would be admitted',
    };
    for (const x of impact) {
      process.stdout.write(`VirtualCluster ${x.tenant}: ${verb[x.change]}\n`);
      for (const v of x.violations) process.stdout.write(`  ${v}\n`);
    }
    const newly = impact.filter((x) => x.change === 'newly-refused').length;
    process.stdout.write(
      `${tenants.length} tenant(s) checked: ${newly} would be newly refused, ` +
        `${impact.filter((x) => x.change === 'still-refused').length} stay refused, ` +
        `${impact.filter((x) => x.change === 'now-admitted').length} would be admitted\n`,
    );
    if (newly) process.exitCode = 1;
  } finally {
    c.close();
  }
}

/** registerGitOpsCommands adds `vc validate` and `vc diff`. */
export function registerGitOpsCommands(program: Command): void {
  program
    .command('validate [dir]')
    .description(
      "check a tenant repository's definitions against the schemas and the TenantPolicies (for the repository's own " +
        'CI); with --existing, check every VirtualCluster on the meta cluster against proposed TenantPolicies',
    )
    .option(
      '--policy <file>',
      'TenantPolicy YAML to check the definitions against (repeatable)',
      (v: string, acc: string[]) => [...acc, v],
      [] as string[],
    )
    .option('-f, --file <dir>', 'the directory to check (instead of the argument)')
    .option('--kubeconfig <file>', "also check against the meta cluster's TenantPolicies and namespace labels")
    .option('--context <name>', 'the kubeconfig context to use (default: its current-context)')
    .option(
      '--existing',
      "simulate: which of the meta cluster's VirtualClusters the --policy files (in place of the live policies of the " +
        'same names) would refuse; exits 1 when one would be newly refused',
    )
    .option(
      '--source <namespace/name>',
      'the GitSource that applies the repository, for the grants given to it (default: grants to namespaces only)',
    )
    .action(async (arg: string | undefined, o: ValidateFlags) => {
      if (o.existing) return simulateExisting(arg ?? o.file, o);
      const dir = oneSource(arg, o.file, 'validate');
      const { planApply } = await import('../../../gitops/applier/applier.ts');
      const { policyErrors, readNamespaceLabels, readTenantPolicies } =
        await import('../../../gitops/applier/policy.ts');
      const artifact = await readDirArtifact(dir);
      const [namespace, name, ...rest] = (o.source ?? 'validate/validate').split('/');
      if (!namespace || !name || rest.length) throw new CliError(`--source ${o.source}: expected namespace/name`);
      const plan = planApply(artifact, [], { namespace, name });
      const policies = [...o.policy.flatMap(readPolicyFile)];
      let labels;
      if (o.kubeconfig) {
        const c = await clusterClient(o);
        const live = await readTenantPolicies(c);
        labels = live && (await readNamespaceLabels(c, plan.apply));
        c.close();
        if (!live) throw new CliError(`${o.kubeconfig}: cannot read TenantPolicies`);
        policies.push(...live);
      }
      if (o.policy.length || o.kubeconfig) plan.errors.push(...policyErrors(plan.apply, policies, labels));
      for (const e of plan.errors) process.stderr.write(`${e.message}\n`);
      if (plan.errors.length) throw new CliError(`${plan.errors.length} problem(s) in ${dir}`);
      if (!plan.apply.length) throw new CliError(`${dir}: no tenant definitions found`);
      process.stdout.write(`${dir}: ${plan.apply.length} object(s) valid\n`);
    });

  program
    .command('diff [source]')
    .description('what applying a directory or a git revision would create, change and delete; changes nothing')
    .option('-f, --file <source>', 'the directory or git URL (instead of the argument)')
    .option('--ref <ref>', 'branch, tag:<name> or commit of a git URL', 'main')
    .option('--path <path>', 'directory inside the repository', '.')
    .option(
      '--source <namespace/name>',
      'the GitSource that applies these definitions (default: the one labelled on the live objects)',
    )
    .option('--kubeconfig <file>', 'kubeconfig of the meta cluster (see `vc --help` for the default)')
    .option('--context <name>', 'the kubeconfig context to use (default: its current-context)')
    .action(
      async (
        arg: string | undefined,
        o: { file?: string; ref: string; path: string; source?: string; kubeconfig?: string; context?: string },
      ) => {
        const source = oneSource(arg, o.file, 'diff');
        const { planDiff } = await import('../../../gitops/applier/diff.ts');
        const artifact = /^(https?|file):\/\//.test(source)
          ? await urlArtifact(source, o.ref, o.path)
          : await readDirArtifact(source);
        const c = await clusterClient(o);
        const live: KubeObject[] = [];
        for (const r of [R.virtualclusters, R.clusterversions]) {
          for (const item of (await c.list(r)).items)
            live.push({ ...item, apiVersion: 'tenancy.x-k8s.io/v1alpha1', kind: r.kind });
        }
        // Objects a GitSource applied carry its label; knowing the source keeps that label from showing as a change.
        const labels = new Set(live.map((x) => x.metadata?.labels?.[SOURCE_LABEL]).filter((x): x is string => !!x));
        const owner = o.source ?? (labels.size === 1 ? [...labels][0]!.replace('.', '/') : undefined);
        const [ownerNs, ownerName] = owner?.split('/') ?? [];
        const d = planDiff(artifact, live, ownerNs && ownerName ? { namespace: ownerNs, name: ownerName } : undefined);
        const name = (x: { kind: string; namespace?: string; name: string }) =>
          `${x.kind} ${x.namespace ? `${x.namespace}/` : ''}${x.name}`;
        for (const x of d.create) process.stdout.write(`+ ${name(x)} (${x.file})\n`);
        for (const x of d.change)
          process.stdout.write(`~ ${name(x.object)} (${x.object.file}): ${x.fields.join(', ')}\n`);
        for (const x of d.delete) process.stdout.write(`- ${name(x)}\n`);
        for (const e of d.errors) process.stderr.write(`${e.message}\n`);
        process.stdout.write(
          `${d.create.length} to create, ${d.change.length} to change, ${d.delete.length} to delete\n`,
        );
        // As `kubectl diff`: 0 without differences, 1 with them, and above 1 when it failed.
        if (d.errors.length) process.exitCode = 2;
        else if (d.create.length + d.change.length + d.delete.length) process.exitCode = 1;
      },
    );
}

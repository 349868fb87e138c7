/**
 * Reading one commit of a cached repository: the YAML and JSON files under a path, straight from the object database
 * (no checkout), parsed into documents within the limits of one revision.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import git from 'isomorphic-git';
import { LineCounter, parseAllDocuments } from 'yaml';
import type { ParseError, SourceDocument } from '../artifact.ts';
import { SourceError, errorMessage } from './errors.ts';
import type { SourceLimits } from './ref.ts';

/** TreeContent is what was read from one commit. */
export interface TreeContent {
  documents: SourceDocument[];
  parseErrors: ParseError[];
  digest: string;
}

const MANIFEST_EXTENSIONS = ['.yaml', '.yml', '.json'] as const;

/** contentDigest is `sha256:<hex>` over the files sorted by path, each as path, length and content. */
export function contentDigest(files: ReadonlyArray<{ path: string; content: Uint8Array }>): string {
  const hash = createHash('sha256');
  for (const file of [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    hash.update(`${file.path}\0${file.content.length}\0`);
    hash.update(file.content);
  }
  return `sha256:${hash.digest('hex')}`;
}

/**
 * parseManifests parses one file as a stream of YAML documents (JSON is YAML). A file with any error yields one
 * ParseError and no documents; empty documents are skipped; `index` is the document's position in the file.
 */
export function parseManifests(file: string, text: string): { documents: SourceDocument[]; error?: ParseError } {
  const lineCounter = new LineCounter();
  const docs = parseAllDocuments(text, { lineCounter, prettyErrors: true, uniqueKeys: true });
  const documents: SourceDocument[] = [];
  for (const [index, doc] of docs.entries()) {
    const yamlError = doc.errors[0];
    if (yamlError) {
      const pos = yamlError.linePos?.[0];
      return {
        documents: [],
        error: {
          file,
          ...(pos ? { line: pos.line, column: pos.col } : {}),
          message: (yamlError.message.split('\n')[0] ?? yamlError.code).replace(/ at line \d+, column \d+:?$/, ''),
        },
      };
    }
    const at = doc.contents?.range?.[0];
    const pos = at === undefined ? undefined : lineCounter.linePos(at);
    const where = pos ? { line: pos.line, column: pos.col } : {};
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: 100 });
    } catch (err) {
      return { documents: [], error: { file, ...where, message: `document ${index}: ${errorMessage(err)}` } };
    }
    if (value === null || value === undefined) continue;
    if (typeof value !== 'object' || Array.isArray(value)) {
      return { documents: [], error: { file, ...where, message: `document ${index} is not a mapping` } };
    }
    documents.push({ file, index, object: value as Record<string, unknown> });
  }
  return { documents };
}

/**
 * documentBound is the most YAML documents a text can hold: one, plus one per line that starts with a document marker
 * (`---` or `...`). It is counted before parsing, so a file of a million empty documents is refused unparsed.
 */
export function documentBound(text: string): number {
  return 1 + (text.match(/^(?:---|\.\.\.)(?=[ \t\r\n]|$)/gm)?.length ?? 0);
}

/** readTree parses the manifests under `path` in a cached commit, within `limits`. */
export async function readTree(
  gitdir: string,
  commit: string,
  path: string,
  limits: Required<SourceLimits>,
): Promise<TreeContent> {
  const cache = {};
  const { commit: parsed } = await git.readCommit({ fs, gitdir, oid: commit, cache });
  const root = await lookup(gitdir, parsed.tree, path, commit, cache);
  const files: Array<{ path: string; content: Uint8Array }> = [];
  const { maxFiles, maxTotalBytes } = limits;
  let entries = 0;
  let bytes = 0;
  const where = `${JSON.stringify(path)} of commit ${commit}`;
  const count = (what: string, size: number): void => {
    entries++;
    bytes += size;
    if (entries > maxFiles) {
      throw new SourceError(
        'LimitExceeded',
        `path ${where} holds more than ${maxFiles} manifest files and directories (gitops.limits.maxFiles); nothing of it is applied`,
      );
    }
    if (bytes > maxTotalBytes) {
      throw new SourceError(
        'LimitExceeded',
        `manifests under ${where} exceed ${maxTotalBytes} bytes at ${what} (gitops.limits.maxTotalBytes); nothing of it is applied`,
      );
    }
  };
  const visit = async (treeOid: string, prefix: string): Promise<void> => {
    const { tree } = await git.readTree({ fs, gitdir, oid: treeOid, cache });
    for (const entry of tree) {
      const entryPath = prefix ? `${prefix}/${entry.path}` : entry.path;
      if (entry.type === 'tree') {
        count(entryPath, 0);
        await visit(entry.oid, entryPath);
      } else if (entry.type === 'blob' && entry.mode !== '120000' && isManifest(entryPath)) {
        const { blob } = await git.readBlob({ fs, gitdir, oid: entry.oid, cache });
        count(entryPath, Math.min(blob.length, limits.maxFileBytes + 1));
        files.push({ path: entryPath, content: blob });
      }
    }
  };
  if (root.type === 'tree') await visit(root.oid, path);
  else if (isManifest(path)) {
    const { blob } = await git.readBlob({ fs, gitdir, oid: root.oid, cache });
    files.push({ path, content: blob });
  }
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));

  const documents: SourceDocument[] = [];
  const parseErrors: ParseError[] = [];
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let docs = 0;
  for (const file of files) {
    if (file.content.length > limits.maxFileBytes) {
      parseErrors.push({
        file: file.path,
        message: `file is larger than ${limits.maxFileBytes} bytes (gitops.limits.maxFileBytes)`,
      });
      continue;
    }
    let text: string;
    try {
      text = decoder.decode(file.content);
    } catch {
      parseErrors.push({ file: file.path, message: 'file is not valid UTF-8' });
      continue;
    }
    docs += documentBound(text);
    if (docs > limits.maxDocuments)
      throw new SourceError(
        'LimitExceeded',
        `manifests under ${where} hold more than ${limits.maxDocuments} ` +
          `YAML documents at ${file.path} (gitops.limits.maxDocuments); nothing of it is applied`,
      );
    const parsed = parseManifests(file.path, text);
    documents.push(...parsed.documents);
    if (parsed.error) parseErrors.push(parsed.error);
  }
  return { documents, parseErrors, digest: contentDigest(files) };
}

/** lookup finds the tree (or blob) at `path` under the root tree of a commit. */
async function lookup(
  gitdir: string,
  rootTree: string,
  path: string,
  commit: string,
  cache: object,
): Promise<{ type: 'tree' | 'blob'; oid: string }> {
  let current: { type: 'tree' | 'blob'; oid: string } = { type: 'tree', oid: rootTree };
  for (const part of path ? path.split('/') : []) {
    const entry =
      current.type === 'tree'
        ? (await git.readTree({ fs, gitdir, oid: current.oid, cache })).tree.find((e) => e.path === part)
        : undefined;
    if (!entry || (entry.type !== 'tree' && entry.type !== 'blob') || entry.mode === '120000') {
      throw new SourceError('PathNotFound', `path ${JSON.stringify(path)} not found in commit ${commit}`);
    }
    current = { type: entry.type, oid: entry.oid };
  }
  return current;
}

function isManifest(path: string): boolean {
  const lower = path.toLowerCase();
  return MANIFEST_EXTENSIONS.some((ext) => lower.endsWith(ext));
}

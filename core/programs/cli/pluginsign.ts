/**
 * `vc plugins keygen|sign|verify`: make an Ed25519 signing key, sign a plugin package folder, and check a folder's
 * signature against the keys a platform trusts (the manager's plugins.trustedKeys) before installing it.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import {
  generateSigningKey,
  keyId,
  readTrustedKeys,
  signatureProblem,
  signPackage,
  SIGNATURE_FILE,
} from '../../plugins/signing.ts';
import { CliError } from './errors.ts';

/** registerPluginSigningCommands adds keygen, sign and verify under `vc plugins`. */
export function registerPluginSigningCommands(plugins: Command): void {
  plugins
    .command('keygen')
    .description('write a new Ed25519 key pair for signing plugin packages: PREFIX.key (private) and PREFIX.pub')
    .argument('<prefix>', 'path prefix of the two files')
    .action((prefix: string) => {
      const { privateKeyPem, publicKeyPem } = generateSigningKey();
      for (const f of [`${prefix}.key`, `${prefix}.pub`])
        if (existsSync(f)) throw new CliError(`${f} exists; choose another prefix`);
      writeFileSync(`${prefix}.key`, privateKeyPem, { mode: 0o600 });
      writeFileSync(`${prefix}.pub`, publicKeyPem);
      process.stdout.write(
        `key ${keyId(publicKeyPem)}: ${prefix}.key (keep private), ${prefix}.pub (list it in plugins.trustedKeys)\n`,
      );
    });
  plugins
    .command('sign')
    .description(
      `sign a plugin package folder (as installed: package.json and the code it runs); writes ${SIGNATURE_FILE} into it`,
    )
    .argument('<dir>', 'the package folder')
    .requiredOption('--key <file>', 'Ed25519 private key (PEM), from vc plugins keygen')
    .action((dir: string, o: { key: string }) => {
      const sig = signPackage(resolve(dir), readFileSync(o.key, 'utf8'));
      process.stdout.write(`signed ${resolve(dir)} with key ${sig.keyId}: ${sig.digest}\n`);
    });
  plugins
    .command('verify')
    .description('check a plugin package folder against trusted public keys; exits 1 with the reason when it fails')
    .argument('<dir>', 'the package folder')
    .requiredOption(
      '--key <file>',
      'a trusted Ed25519 public key (PEM); repeat for more',
      (v: string, prev: string[] | undefined) => [...(prev ?? []), v],
    )
    .action((dir: string, o: { key: string[] }) => {
      const problem = signatureProblem(resolve(dir), readTrustedKeys(o.key));
      if (problem) throw new CliError(problem);
      process.stdout.write(`verified ${resolve(dir)}\n`);
    });
}

// The public surface of core/pki: certificate authorities, control-plane PKI and kubeconfigs.
export {
  CERT_USAGES,
  createCA,
  createCertificateRequest,
  createKeyPair,
  fingerprintSha256,
  firstServiceIP,
  issueCert,
  issueNodeCert,
  subjectOf,
} from './ca.ts';
export type { CertificateRequest, CertKeyPair, CertUsage, KeyPair, LeafOptions } from './ca.ts';
export { PKI_FILES, generateControlPlanePKI, issueApiserverCert, readPKI, writePKI } from './controlplane.ts';
export type { CertKeyField, ControlPlanePKI, ControlPlanePKIOptions } from './controlplane.ts';
export { renderKubeconfig } from './kubeconfig.ts';
export type { KubeconfigOptions } from './kubeconfig.ts';

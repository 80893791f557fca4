/** A self-signed certificate for 127.0.0.1 (openssl), for servers the official SDKs reach over https/wss. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './tempDir.ts';

export interface SelfSigned {
  readonly certFile: string;
  readonly keyFile: string;
  readonly cert: Buffer;
  readonly key: Buffer;
}

export function selfSignedCert(dir = tempDir('tls')): SelfSigned {
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
    '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', keyFile, '-out', certFile,
  ], { stdio: 'ignore' }); // prettier-ignore
  return { certFile, keyFile, cert: readFileSync(certFile), key: readFileSync(keyFile) };
}

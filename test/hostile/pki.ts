/**
 * A throwaway PKI for the TLS tests, made with the openssl CLI in a temp folder: a CA, a
 * server certificate for localhost/127.0.0.1 signed by it, client certificates (signed by
 * the CA, or self-signed), each with the SANs asked for.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

export interface Pair {
  cert: string;
  key: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

export class Pki {
  readonly ca: Pair;
  private n = 0;
  constructor(readonly dir: string) {
    fs.mkdirSync(dir, { recursive: true });
    this.ca = { cert: path.join(dir, 'ca.pem'), key: path.join(dir, 'ca.key') };
    openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', '/CN=test CA', '-days', '2', '-keyout', this.ca.key, '-out', this.ca.cert], dir);
  }

  /** A key and a certificate signed by the CA (or self-signed), with the given SANs. */
  issue(name: string, sans: string[], opts: { selfSigned?: boolean; rsa?: boolean } = {}): Pair {
    const id = `${name}-${++this.n}`;
    const key = path.join(this.dir, `${id}.key`);
    const cert = path.join(this.dir, `${id}.pem`);
    const keyArgs = opts.rsa ? ['-newkey', 'rsa:2048'] : ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256'];
    const ext = path.join(this.dir, `${id}.ext`);
    fs.writeFileSync(ext, `subjectAltName=${sans.join(',')}\n`);
    if (opts.selfSigned) {
      openssl(['req', '-x509', ...keyArgs, '-nodes', '-subj', `/CN=${name}`, '-days', '2', '-keyout', key, '-out', cert, '-addext', `subjectAltName=${sans.join(',')}`], this.dir);
      return { cert, key };
    }
    const csr = path.join(this.dir, `${id}.csr`);
    openssl(['req', ...keyArgs, '-nodes', '-subj', `/CN=${name}`, '-keyout', key, '-out', csr], this.dir);
    openssl(['x509', '-req', '-in', csr, '-CA', this.ca.cert, '-CAkey', this.ca.key, '-CAcreateserial', '-days', '2', '-extfile', ext, '-out', cert], this.dir);
    return { cert, key };
  }

  read(p: string): Buffer {
    return fs.readFileSync(p);
  }
}

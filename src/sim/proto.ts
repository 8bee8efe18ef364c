/**
 * cuzk.v1.ProvingEngine from our proto (proto/cuzk/v1/proving.proto; cuzk serves no
 * reflection), located from the package root so it works from ts-jest, dist/ and an
 * installed tarball. Loaded with keepCase, enums as names, uint64 as Numbers, defaults on.
 */
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { findPackageRoot } from '../util/package-root';

/** The proto, from the package root (works from ts-jest, dist/ and an installed tarball). */
export function protoPath(): string {
  return path.join(findPackageRoot(), 'proto', 'cuzk', 'v1', 'proving.proto');
}

export function loadProvingEngine(): grpc.ServiceClientConstructor {
  const def = protoLoader.loadSync(protoPath(), { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true });
  const pkg = grpc.loadPackageDefinition(def) as unknown as { cuzk: { v1: { ProvingEngine: grpc.ServiceClientConstructor } } };
  return pkg.cuzk.v1.ProvingEngine;
}

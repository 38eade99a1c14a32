import type { AddressInfo, Server as NetServer } from 'node:net';

/** Listens and resolves with the port bound (the OS's choice when `port` is 0). */
export function listen(server: NetServer, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** What closing needs of an HTTP server, whatever its response class. */
export interface ClosableServer {
  close(callback: () => void): unknown;
  closeAllConnections(): void;
  closeIdleConnections(): void;
}

/** Stops accepting, lets open requests finish, and cuts what is still open after timeoutMs. */
export function close(server: ClosableServer, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => server.closeAllConnections(), timeoutMs);
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    server.closeIdleConnections();
  });
}

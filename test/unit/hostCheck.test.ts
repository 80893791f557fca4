/** The Host allow-list and the server's own origins (src/server/hostCheck.ts): DNS rebinding, as pure functions. */
import { hostname, networkInterfaces } from 'node:os';
import { describe, expect, it } from 'vitest';
import { checkAllowedHosts } from '../../src/server/options.ts';
import {
  exposedBeyondLoopback,
  hostAllowed,
  hostnameOf,
  hostPolicy,
  originAllowed,
} from '../../src/server/hostCheck.ts';

describe('Host allow-list', () => {
  const loopback = hostPolicy('127.0.0.1', []);

  it('answers to the loopback names at any port, and to nothing else by default', () => {
    for (const host of ['localhost', 'localhost:8000', 'LOCALHOST.:8000', '127.0.0.1:1', '[::1]:8000', '[::1]'])
      expect(hostAllowed(host, loopback), host).toBe(true);
    for (const host of ['evil.example', 'evil.example:8000', 'localhost.evil.example', '127.0.0.1.nip.io:8000', ''])
      expect(hostAllowed(host, loopback), host).toBe(false);
    expect(hostAllowed('evil.example@127.0.0.1', loopback)).toBe(false); // not a Host at all
    expect(hostAllowed(undefined, loopback)).toBe(true); // no browser omits Host
  });

  it('adds the bound host and --allowed-hosts; * turns the check off', () => {
    expect(hostAllowed('chorus.lan:8000', hostPolicy('chorus.lan', []))).toBe(true);
    expect(hostAllowed('[fd00::1]:8000', hostPolicy('fd00::1', []))).toBe(true);
    const listed = hostPolicy('127.0.0.1', ['Chorus.Example.com', '[fd00::2]']);
    expect(hostAllowed('chorus.example.com', listed)).toBe(true);
    expect(hostAllowed('[fd00::2]:80', listed)).toBe(true);
    expect(hostAllowed('other.example.com', listed)).toBe(false);
    expect(hostAllowed('anything', hostPolicy('127.0.0.1', ['*']))).toBe(true);
  });

  it("bound to every interface, answers to the machine's own addresses (how probes name it), no other", () => {
    const all = hostPolicy('0.0.0.0', []);
    const own = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && a.family === 'IPv4' && !a.internal);
    if (own) expect(hostAllowed(`${own.address}:8000`, all)).toBe(true);
    expect(hostAllowed(`${hostname()}:8000`, all)).toBe(true);
    expect(hostAllowed(`${hostname()}:8000`, hostPolicy('127.0.0.1', []))).toBe(hostname() === 'localhost');
    expect(hostAllowed('203.0.113.9:8000', all)).toBe(false);
    expect(hostAllowed('evil.example', all)).toBe(false);
  });

  it('parses Host headers strictly', () => {
    expect(hostnameOf('Example.COM.:80')).toBe('example.com');
    expect(hostnameOf('[::1]:8000')).toBe('::1');
    expect(hostnameOf('a b')).toBeNull();
    expect(hostnameOf('x:port')).toBeNull();
  });

  it('refuses allow-list entries that are not host names (a URL or a port would allow nothing)', () => {
    expect(checkAllowedHosts(['a.example', '10.0.0.5', '[fd00::1]', '*'])).toHaveLength(4);
    for (const bad of ['https://a.example', 'a.example:8000', 'a example', ''])
      expect(() => checkAllowedHosts([bad]), bad).toThrow(/not a host name or address/);
  });

  it('knows which binds expose the server', () => {
    expect(['127.0.0.1', '127.0.0.2', 'localhost', '::1'].map(exposedBeyondLoopback)).toEqual([
      false,
      false,
      false,
      false,
    ]);
    expect(['0.0.0.0', '::', '10.0.0.5', 'chorus.lan'].map(exposedBeyondLoopback)).toEqual([true, true, true, true]);
  });
});

describe('origins', () => {
  const policy = hostPolicy('127.0.0.1', ['chorus.lan']);

  it("allows the server's own origins: a name it answers to at the port the request came in on", () => {
    expect(originAllowed('http://127.0.0.1:8000', [], policy, 8000)).toBe(true);
    expect(originAllowed('http://localhost:8000', [], policy, 8000)).toBe(true);
    expect(originAllowed('http://chorus.lan:8000', [], policy, 8000)).toBe(true);
    expect(originAllowed('http://[::1]:8000', [], policy, 8000)).toBe(true);
    expect(originAllowed('http://chorus.lan', [], policy, 80)).toBe(true);
    expect(originAllowed('https://chorus.lan', [], policy, 443)).toBe(true);
    expect(originAllowed('http://127.0.0.1:8001', [], policy, 8000)).toBe(false); // another app on this machine
  });

  it('never because the Origin matches the Host (the rebound page chooses both)', () => {
    expect(originAllowed('http://evil.example:8000', [], policy, 8000)).toBe(false);
  });

  it('allows listed origins and *, nothing that is not an http(s) origin', () => {
    expect(originAllowed('https://a.example', ['https://a.example'], policy, 8000)).toBe(true);
    expect(originAllowed('https://b.example', ['https://a.example'], policy, 8000)).toBe(false);
    expect(originAllowed('whatever', ['*'], policy, 8000)).toBe(true);
    expect(originAllowed('null', [], policy, 8000)).toBe(false);
    expect(originAllowed('file://127.0.0.1:8000', [], policy, 8000)).toBe(false);
  });
});

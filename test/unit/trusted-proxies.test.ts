import { ConfigError, loadConfig } from '../../src/config';
import { clientAddress, parseTrustProxy, trustsPeer } from '../../src/proxy-trust';

describe('TRUST_PROXY', () => {
  it('trusts no one by default: the socket peer is the client whatever X-Forwarded-For says', () => {
    const none = parseTrustProxy('');
    expect(none).toEqual({ kind: 'none' });
    expect(loadConfig({}).TRUST_PROXY).toBe('');
    expect(trustsPeer(none, '127.0.0.1')).toBe(false);
    expect(clientAddress(none, '::ffff:192.0.2.10', '203.0.113.1, 198.51.100.2')).toBe('192.0.2.10');
  });

  it('with a hop count, believes that many proxies from the right of the chain', () => {
    const one = parseTrustProxy('1');
    expect(trustsPeer(one, '192.0.2.10')).toBe(true);
    // The client wrote 198.51.100.66 itself; our one proxy appended the address it saw.
    expect(clientAddress(one, '192.0.2.10', '198.51.100.66, 203.0.113.1')).toBe('203.0.113.1');
    expect(clientAddress(parseTrustProxy('2'), '192.0.2.10', '198.51.100.66, 203.0.113.1, 10.0.0.5')).toBe('203.0.113.1');
    // A proxy that forwarded no header: the peer itself.
    expect(clientAddress(one, '192.0.2.10', undefined)).toBe('192.0.2.10');
  });

  it('with addresses, walks left through trusted proxies only', () => {
    const trust = parseTrustProxy('loopback, 10.0.0.0/8, 2001:db8::1');
    expect(trustsPeer(trust, '::ffff:127.0.0.1')).toBe(true);
    expect(trustsPeer(trust, '192.0.2.10')).toBe(false);
    expect(clientAddress(trust, '127.0.0.1', '198.51.100.66, 203.0.113.1, 10.1.2.3')).toBe('203.0.113.1');
    expect(clientAddress(trust, '2001:db8::1', '203.0.113.9')).toBe('203.0.113.9');
    // An untrusted peer speaks for itself only.
    expect(clientAddress(trust, '192.0.2.10', '203.0.113.1')).toBe('192.0.2.10');
  });

  it('refuses "true" and what is not an address, a range or a known name, naming the variable', () => {
    for (const bad of ['true', '*', 'proxy.example', '10.0.0.0/33', '10.0.0.1/8/2']) {
      expect(() => loadConfig({ TRUST_PROXY: bad })).toThrow(ConfigError);
      expect(() => loadConfig({ TRUST_PROXY: bad })).toThrow(/TRUST_PROXY/);
    }
    expect(loadConfig({ TRUST_PROXY: 'uniquelocal,linklocal' }).TRUST_PROXY).toBe('uniquelocal,linklocal');
  });
});

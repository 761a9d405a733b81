/**
 * `isServiceLink`: a variable is Kubernetes' service link only when its name and its value
 * both have the shape Kubernetes gives them; a setting's variable, a kept alias or a
 * misspelt setting never is, whatever its value.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  NON_SETTING_VARIABLES,
  RETIRED_VARIABLES,
  settingVariables,
  VARIABLE_ALIASES,
} from '../../src/config/environment.js';
import { isServiceLink } from '../../src/config/serviceLinks.js';

const LINKS: readonly [string, string][] = [
  ['PORTARIA_SERVICE_HOST', '10.96.0.12'],
  ['PORTARIA_SERVICE_HOST', 'fd00:10:96::c'],
  ['PORTARIA_SERVICE_PORT', '80'],
  ['PORTARIA_SERVICE_PORT_HTTP', '80'],
  ['PORTARIA_SERVER_SERVICE_PORT_GRPC_WEB', '8080'],
  ['PORTARIA_PORT', 'tcp://10.96.0.12:80'],
  ['PORTARIA_ADMIN_PORT', 'tcp://10.96.0.13:9091'],
  ['PORTARIA_PORT', 'tcp://[fd00:10:96::c]:80'],
  ['PORTARIA_PROD_PORT', 'udp://10.96.0.12:53'],
  ['PORTARIA_PORT_80_TCP', 'tcp://10.96.0.12:80'],
  ['PORTARIA_PORT_53_UDP', 'udp://10.96.0.12:53'],
  ['PORTARIA_PORT_9_SCTP', 'sctp://10.96.0.12:9'],
  ['PORTARIA_PORT_80_TCP_PROTO', 'tcp'],
  ['PORTARIA_PORT_80_TCP_PORT', '80'],
  ['PORTARIA_PORT_80_TCP_ADDR', '10.96.0.12'],
  ['PORTARIA_ADMIN_PORT_9091_TCP_ADDR', 'fd00::d'],
];

const NOT_LINKS: readonly [string, string, string][] = [
  ['PORTARIA_PORT', '8443', 'a port number where Kubernetes puts an address'],
  ['PORTARIA_ADMIN_PORT', '9443', 'a port number where Kubernetes puts an address'],
  ['PORTARIA_SERVER_PORT', '8443', 'a misspelt PORTARIA_SERVER__PORT'],
  ['PORTARIA_PORT', 'http://10.96.0.12:80', 'not a link protocol'],
  ['PORTARIA_PORT', 'tcp://portaria:80', 'a host name, not an address'],
  ['PORTARIA_PORT', 'tcp://fd00::c:80', 'an IPv6 address without brackets'],
  ['PORTARIA_PORT', 'tcp://[10.96.0.12]:80', 'an IPv4 address in brackets'],
  ['PORTARIA_PORT', 'tcp://10.96.0.12:0', 'port 0'],
  ['PORTARIA_PORT', 'tcp://10.96.0.12:65536', 'a port above 65535'],
  ['PORTARIA_PORT_80_TCP', 'tcp://10.96.0.12:81', 'another port than the name says'],
  ['PORTARIA_PORT_80_TCP', 'udp://10.96.0.12:80', 'another protocol than the name says'],
  ['PORTARIA_PORT_80_TCP_PROTO', 'udp', 'another protocol than the name says'],
  ['PORTARIA_PORT_80_TCP_PORT', '81', 'another port than the name says'],
  ['PORTARIA_PORT_80_TCP_ADDR', 'portaria', 'not an address'],
  ['PORTARIA_PORT_80_HTTP', 'tcp://10.96.0.12:80', 'not a Kubernetes protocol'],
  ['PORTARIA_SERVICE_HOST', 'portaria.default.svc', 'not an address'],
  ['PORTARIA_SERVICE_PORT', '080', 'not a port number as Kubernetes writes one'],
  ['PORTARIA_SERVICE_PORT', 'http', 'not a port number'],
  ['PORTARIA_SERVICE_PORT_', '80', 'an empty port name'],
  ['PORTARIA__SERVICE_HOST', '10.96.0.12', 'a Service name ending in "-"'],
  ['PORTARIA_SERVICE_HOSTS', '10.96.0.12', 'no such suffix'],
];

/** Every value shape Kubernetes writes, to try against names that must never match. */
const ANY_VALUE = [
  '10.96.0.12',
  'fd00::c',
  '80',
  '8080',
  'tcp',
  'udp',
  'tcp://10.96.0.12:80',
  'tcp://[fd00::c]:80',
];

describe('isServiceLink', () => {
  for (const [name, value] of LINKS) {
    test(`${name}=${value} is a service link`, () => {
      assert.equal(isServiceLink(name, value), true);
    });
  }

  for (const [name, value, why] of NOT_LINKS) {
    test(`${name}=${value} is not a service link (${why})`, () => {
      assert.equal(isServiceLink(name, value), false);
    });
  }

  test('no setting variable, kept alias or other variable of ours has a service link name', () => {
    const ours = [
      ...settingVariables().map((s) => s.name),
      ...Object.keys(VARIABLE_ALIASES),
      ...Object.keys(NON_SETTING_VARIABLES),
    ];
    assert.ok(ours.length > 50, 'the walk found the settings');
    for (const name of ours) {
      for (const value of ANY_VALUE) {
        assert.equal(isServiceLink(name, value), false, `${name}=${value}`);
      }
    }
  });

  test("the retired short names are the first-port variables of the chart's two Services", () => {
    assert.deepEqual(Object.keys(RETIRED_VARIABLES), ['PORTARIA_PORT', 'PORTARIA_ADMIN_PORT']);
    for (const name of Object.keys(RETIRED_VARIABLES)) {
      assert.equal(isServiceLink(name, 'tcp://10.96.0.12:80'), true);
    }
  });
});

import { parsePaymentApiCredentials } from '../../../src/paymentApi/credentials';

describe('parsePaymentApiCredentials', () => {
  it('When entries are posId:clientId:clientSecret, then each POS gets its client; the secret may hold ":"', () => {
    expect(parsePaymentApiCredentials(' 145227:145227:12f071174cb7eb79d4aac5bc2f07563f , 300746:c2:a:b ')).toEqual({
      credentials: [
        { posId: '145227', clientId: '145227', clientSecret: '12f071174cb7eb79d4aac5bc2f07563f' },
        { posId: '300746', clientId: 'c2', clientSecret: 'a:b' },
      ],
      problems: [],
    });
  });

  it.each([
    ['', ["entry 1 is empty (a stray ',')"]],
    ['1:c:s;2:d:t', ["entry 1 holds a space or ';': entries are separated by ','"]],
    ['1:c', ['entry 1 is not of the form posId:clientId:clientSecret']],
    [
      '1:c:s,2::s,3:c:',
      [
        'entry 2 is not of the form posId:clientId:clientSecret',
        'entry 3 is not of the form posId:clientId:clientSecret',
      ],
    ],
    ['1:c:s,1:d:t', ['entry 2: POS 1 appears more than once (one client per POS)']],
  ])('When the value is %p, then the problems name entries, never their secrets', (value, problems) => {
    expect(parsePaymentApiCredentials(value).problems).toEqual(problems);
  });
});

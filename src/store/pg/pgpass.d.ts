/** pgpass 1.0.x (node-postgres's reader of ~/.pgpass): the password for a connection's parameters, or undefined */
declare module 'pgpass' {
  function pgpass(connInfo: object, cb: (password: string | undefined) => void): void
  export default pgpass
}

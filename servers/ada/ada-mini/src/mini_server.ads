--  The single-task event loop of ada-mini.
--
--  One task accepts and serves every connection: all sockets are
--  non-blocking and multiplexed with GNAT.Sockets' selector
--  (Check_Selector with a read set and a write set, i.e. select(2)).
--  Each round services every ready socket once, so no connection starves.

with GNAT.Sockets;

package Mini_Server is

   Max_Clients : constant := 1000;
   --  Connections served at once.  select(2) handles descriptors below
   --  FD_SETSIZE (1024) only: a connection beyond Max_Clients, or whose
   --  descriptor is >= 1024, is closed at once (the client sees a reset
   --  or an end of stream, the server goes on).

   Idle_Seconds : constant := 60;
   --  A connection with no complete exchange for this long is closed.

   function Listen
     (Address : GNAT.Sockets.Sock_Addr_Type;
      Backlog : Positive) return GNAT.Sockets.Socket_Type;
   --  A non-blocking socket listening on Address (IPv4 or IPv6) with a
   --  queue of Backlog pending connections (the kernel caps it at
   --  net.core.somaxconn).  Socket_Error if the address cannot be bound.

   procedure Serve (Listener : GNAT.Sockets.Socket_Type);
   --  Accept and serve connections on Listener forever.

end Mini_Server;

--  The greeting on Simple Components' HTTP server
--  (GNAT.Sockets.Connection_State_Machine.HTTP_Server).
--
--  Lab_Server adds what the library leaves to its user: the address to
--  listen on (Get_Server_Address, else every interface) and the accept
--  queue (Create_Socket, else GNAT's default of 15).  With Set_No_Delay,
--  every accepted connection gets TCP_NODELAY (Connected).

with GNAT.Sockets;        use GNAT.Sockets;
with GNAT.Sockets.Server; use GNAT.Sockets.Server;
with GNAT.Sockets.Connection_State_Machine.HTTP_Server;
use  GNAT.Sockets.Connection_State_Machine.HTTP_Server;

package Greeting_Servers is

   --  Set before a Lab_Server is declared (its task reads them).
   Bind_Address : Inet_Addr_Type := Loopback_Inet_Addr;
   Backlog      : Positive := 512;
   Set_No_Delay : Boolean := False;

   type Greeting_Factory (Max_Connections : Positive) is
     new Connections_Factory with null record;

   overriding function Create
     (Factory  : access Greeting_Factory;
      Listener : access Connections_Server'Class;
      From     : Sock_Addr_Type) return Connection_Ptr;

   type Greeting_Client is new HTTP_Client with null record;

   overriding procedure Connected (Client : in out Greeting_Client);
   overriding procedure Do_Get (Client : in out Greeting_Client);

   type Lab_Server is new Connections_Server with null record;

   overriding function Get_Server_Address
     (Listener : Lab_Server) return Sock_Addr_Type;

   overriding procedure Create_Socket
     (Listener : in out Lab_Server;
      Socket   : in out Socket_Type;
      Address  : Sock_Addr_Type);

end Greeting_Servers;

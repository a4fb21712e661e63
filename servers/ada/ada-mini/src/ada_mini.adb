--  ada-mini: the lab's single-task Ada HTTP server, built on GNAT's
--  runtime alone (GNAT.Sockets).  The embedded-class counterpart of the
--  single-task EWS server of the published study.
--
--  Environment: BIND (an IP address, default 127.0.0.1: every interface
--  only when asked), PORT (default 8080) and BACKLOG (the listen queue,
--  default 512).  WORKERS is read only to say that it is ignored: the
--  server is one task by design.  An invalid setting stops it at start
--  with a message, rather than serving with a value nobody asked for.

with Ada.Command_Line;
with Ada.Environment_Variables;
with Ada.Exceptions;
with Ada.Text_IO;

with GNAT.Sockets;

with Lab_Settings; use Lab_Settings;   --  servers/ada/labenv

with Mini_Server;

procedure Ada_Mini is
   use Ada.Environment_Variables;
   use Ada.Text_IO;
   use GNAT.Sockets;

begin
   declare
      Address  : constant Sock_Addr_Type := Network_Socket_Address
        (Addr => Inet_Addr (Lab_Settings.Bind),
         Port => Port_Type (Lab_Settings.Port));
      Backlog  : constant Positive := Lab_Settings.Backlog;
      --  Bound and listening before it says so (a bind error ends it here).
      Listener : constant Socket_Type := Mini_Server.Listen (Address, Backlog);
   begin
      Put_Line ("ada-mini: listening on " & Image (Address)
                & " (backlog" & Positive'Image (Backlog) & "), one task"
                & (if Exists ("WORKERS") and then Value ("WORKERS") /= "1"
                   then " (WORKERS=" & Value ("WORKERS") & " ignored)"
                   else ""));
      Flush (Standard_Output);

      Mini_Server.Serve (Listener);
   end;
exception
   when E : Invalid_Setting =>
      Put_Line (Standard_Error,
                "ada-mini: " & Ada.Exceptions.Exception_Message (E));
      Ada.Command_Line.Set_Exit_Status (Ada.Command_Line.Failure);
end Ada_Mini;

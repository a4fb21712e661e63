--  The lab's Simple Components server: Dmitry Kazakov's HTTP server
--  (Connections_Server: one task multiplexes every connection with select).
--  GET /api answers the greeting as application/json; other paths 404.
--
--  It listens on BIND:PORT (default 127.0.0.1:8080) with backlog BACKLOG
--  (512).  SC_NODELAY=1 sets TCP_NODELAY on every connection (the variant
--  simple-components.nodelay); unset or 0 is the library's default.
--  WORKERS is checked and ignored: Connections_Server has one I/O task.

with Ada.Command_Line;
with Ada.Exceptions;
with Ada.Text_IO;

with GNAT.Sockets;

with Greeting_Servers; use Greeting_Servers;
with Lab_Settings;     use Lab_Settings;   --  servers/ada/labenv

procedure SC_Server is
begin
   declare
      Bind    : constant String := Lab_Settings.Bind;
      Port    : constant Positive := Lab_Settings.Port;
      Workers : constant Positive := Lab_Settings.Workers (1);
      pragma Unreferenced (Workers);   --  checked, then ignored: one task
      Delay_Text : constant String := Env ("SC_NODELAY");
   begin
      Greeting_Servers.Backlog := Lab_Settings.Backlog;
      Greeting_Servers.Bind_Address := GNAT.Sockets.Inet_Addr (Bind);
      if Delay_Text = "1" then
         Greeting_Servers.Set_No_Delay := True;
      elsif Delay_Text /= "" and then Delay_Text /= "0" then
         raise Invalid_Setting with "SC_NODELAY=""" & Delay_Text
           & """: expected 0 or 1";
      end if;
      declare
         Factory : aliased Greeting_Factory (Max_Connections => 10_000);
         Server  : Lab_Server (Factory'Access, GNAT.Sockets.Port_Type (Port));
         pragma Unreferenced (Server);
      begin
         Ada.Text_IO.Put_Line
           ("sc_server: Simple Components HTTP listening on "
            & Endpoint (Bind, Port) & " (backlog "
            & Image (Greeting_Servers.Backlog) & "), 1 I/O task, TCP_NODELAY "
            & (if Greeting_Servers.Set_No_Delay then "on" else "off (default)"));
         Ada.Text_IO.Flush;
         --  The server's task serves until the process is terminated.
         loop
            delay 3600.0;
         end loop;
      end;
   end;
exception
   when E : Invalid_Setting =>
      Ada.Text_IO.Put_Line
        (Ada.Text_IO.Standard_Error,
         "sc_server: " & Ada.Exceptions.Exception_Message (E));
      Ada.Command_Line.Set_Exit_Status (Ada.Command_Line.Failure);
end SC_Server;

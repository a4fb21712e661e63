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

with Mini_Server;

procedure Ada_Mini is
   use Ada.Environment_Variables;
   use Ada.Text_IO;
   use GNAT.Sockets;

   Invalid_Setting : exception;

   --  The text of the environment variable Name, "" when unset.
   function Env (Name : String) return String is
     (if Exists (Name) then Value (Name) else "");

   --  The environment variable Name as a number from 1 to Last, Default
   --  when it is unset or empty; Invalid_Setting otherwise.
   function Env_Positive
     (Name : String; Default, Last : Positive) return Positive
   is
      Text : constant String := Env (Name);
   begin
      if Text = "" then
         return Default;
      end if;
      declare
         N : constant Positive := Positive'Value (Text);
      begin
         if N <= Last then
            return N;
         end if;
      end;
      raise Constraint_Error;
   exception
      when Constraint_Error =>
         raise Invalid_Setting with Name & "=""" & Text
           & """: expected a whole number from 1 to" & Positive'Image (Last);
   end Env_Positive;

   --  The environment variable Name as an IPv4 or IPv6 address (inet_pton:
   --  a host name is refused), Default when it is unset or empty.
   function Env_Address (Name, Default : String) return Inet_Addr_Type is
      Text : constant String := Env (Name);
   begin
      return Inet_Addr (if Text = "" then Default else Text);
   exception
      when Socket_Error | Constraint_Error =>
         raise Invalid_Setting with Name & "=""" & Text
           & """: expected an IP address such as 127.0.0.1 or ::1";
   end Env_Address;

begin
   declare
      Address  : constant Sock_Addr_Type := Network_Socket_Address
        (Addr => Env_Address ("BIND", "127.0.0.1"),
         Port => Port_Type (Env_Positive ("PORT", 8080, 65_535)));
      Backlog  : constant Positive := Env_Positive ("BACKLOG", 512, 65_535);
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
